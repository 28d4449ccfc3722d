//! The list commands: LPUSH, RPUSH, LPOP, LINDEX, LPOS, LREM, LLEN, LRANGE.
//!
//! Arguments are checked before or after the key is looked up in the same order as in
//! Redis 7, since that order decides which error a bad call gets.

use std::collections::VecDeque;

use super::Command;
use crate::redis::exec::{Exec, SYNTAX, integer};
use crate::redis::resp::Frame;

type Reply = Result<Frame, Frame>;

/// Runs list command `command`, or answers `None` if it is not one.
pub(crate) fn dispatch(exec: &mut Exec<'_>, command: Command, args: &[Vec<u8>]) -> Option<Reply> {
    let reply = match command {
        Command::Lpush => push(exec, args, true),
        Command::Rpush => push(exec, args, false),
        Command::Lpop => lpop(exec, args),
        Command::Lindex => lindex(exec, args),
        Command::Lpos => lpos(exec, args),
        Command::Lrem => lrem(exec, args),
        Command::Llen => read(exec, &args[1], |list| {
            Frame::Integer(list.map_or(0, |list| len(list.len())))
        }),
        Command::Lrange => lrange(exec, args),
        _ => return None,
    };
    Some(reply)
}

fn len(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Runs `answer` on the list at `key` (`None` if missing); WRONGTYPE on a string.
fn read(
    exec: &mut Exec<'_>,
    key: &[u8],
    answer: impl FnOnce(Option<&VecDeque<Vec<u8>>>) -> Frame,
) -> Reply {
    let now = exec.ms();
    exec.data.list(key, now).map(answer).map_err(Frame::error)
}

fn push(exec: &mut Exec<'_>, args: &[Vec<u8>], front: bool) -> Reply {
    let now = exec.ms();
    let pushed = exec.data.with_list(&args[1], now, true, |list| {
        for value in &args[2..] {
            if front {
                list.push_front(value.clone());
            } else {
                list.push_back(value.clone());
            }
        }
        list.len()
    });
    match pushed {
        Ok(length) => Ok(Frame::Integer(len(length.unwrap_or_default()))),
        Err(error) => Err(Frame::error(error)),
    }
}

/// A count that must be zero or more, with Redis's error for one that is not.
fn positive(arg: &[u8], message: &str) -> Result<i64, Frame> {
    match integer(arg) {
        Ok(value) if value >= 0 => Ok(value),
        _ => Err(Frame::error(format!("ERR {message}"))),
    }
}

fn lpop(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Reply {
    let count = match args {
        [_, _] => None,
        [_, _, count] => Some(positive(count, "value is out of range, must be positive")?),
        _ => return Err(crate::redis::exec::wrong_arity("lpop")),
    };
    let now = exec.ms();
    let missing = if count.is_some() {
        Frame::NullArray
    } else {
        Frame::NullBulk
    };
    let popped = exec.data.with_list(&args[1], now, false, |list| {
        let take = count.map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let take = take.min(list.len());
        list.drain(..take).collect::<Vec<_>>()
    });
    let Some(mut popped) = popped.map_err(Frame::error)? else {
        return Ok(missing);
    };
    Ok(match count {
        None => popped.pop().map_or(Frame::NullBulk, Frame::Bulk),
        Some(_) => Frame::Array(popped.into_iter().map(Frame::Bulk).collect()),
    })
}

fn lindex(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Reply {
    let now = exec.ms();
    let Some(list) = exec.data.list(&args[1], now).map_err(Frame::error)? else {
        return Ok(Frame::NullBulk);
    };
    let index = integer(&args[2])?;
    let index = if index < 0 {
        len(list.len()).checked_add(index)
    } else {
        Some(index)
    };
    let item = index
        .and_then(|index| usize::try_from(index).ok())
        .and_then(|index| list.get(index));
    Ok(item.map_or(Frame::NullBulk, Frame::bulk))
}

fn lpos(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Reply {
    let options = LposOptions::parse(&args[3..])?;
    let element = &args[2];
    read(exec, &args[1], |list| {
        let Some(list) = list else {
            return if options.count.is_some() {
                Frame::Array(Vec::new())
            } else {
                Frame::NullBulk
            };
        };
        let found = options.positions(list, element);
        match options.count {
            Some(_) => Frame::Array(found.into_iter().map(Frame::Integer).collect()),
            None => found
                .first()
                .map_or(Frame::NullBulk, |&at| Frame::Integer(at)),
        }
    })
}

/// LPOS's options: which match to start from (`RANK`, negative from the tail), how many
/// to answer (`COUNT`, 0 for all; none for a single answer), and how many items to look
/// at (`MAXLEN`, 0 for all).
struct LposOptions {
    rank: i64,
    count: Option<i64>,
    maxlen: i64,
}

impl LposOptions {
    /// Reads the options, name and value pairs, checking each as Redis does.
    fn parse(options: &[Vec<u8>]) -> Result<Self, Frame> {
        let mut read = Self {
            rank: 1,
            count: None,
            maxlen: 0,
        };
        let mut i = 0;
        while let Some(option) = options.get(i) {
            let Some(value) = options.get(i + 1) else {
                return Err(Frame::error(SYNTAX));
            };
            match option.to_ascii_lowercase().as_slice() {
                b"rank" => {
                    read.rank = integer(value)?;
                    if read.rank == 0 {
                        return Err(Frame::error(
                            "ERR RANK can't be zero: use 1 to start from the first match, 2 \
                             from the second ... or use negative to start from the end of the \
                             list",
                        ));
                    }
                }
                b"count" => read.count = Some(positive(value, "COUNT can't be negative")?),
                b"maxlen" => read.maxlen = positive(value, "MAXLEN can't be negative")?,
                _ => return Err(Frame::error(SYNTAX)),
            }
            i += 2;
        }
        Ok(read)
    }

    /// The positions of `element` in `list` these options answer, counted from the head.
    fn positions(&self, list: &VecDeque<Vec<u8>>, element: &[u8]) -> Vec<i64> {
        // Redis negates the rank in C: i64::MIN stays negative, and then every match
        // counts. Wrapping arithmetic reproduces that.
        let from_tail = self.rank < 0;
        let rank = if from_tail {
            self.rank.wrapping_neg()
        } else {
            self.rank
        };
        let length = len(list.len());
        let order: Box<dyn Iterator<Item = &Vec<u8>>> = if from_tail {
            Box::new(list.iter().rev())
        } else {
            Box::new(list.iter())
        };
        let (mut matches, mut found) = (0_i64, Vec::new());
        for (index, item) in (0_i64..).zip(order) {
            if self.maxlen != 0 && index >= self.maxlen {
                break;
            }
            if item.as_slice() != element {
                continue;
            }
            matches += 1;
            if matches >= rank {
                found.push(if from_tail { length - index - 1 } else { index });
                let enough = match self.count {
                    None => true,
                    Some(0) => false,
                    Some(count) => matches.wrapping_sub(rank).wrapping_add(1) >= count,
                };
                if enough {
                    break;
                }
            }
        }
        found
    }
}

fn lrem(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Reply {
    let count = integer(&args[2])?;
    let element = &args[3];
    let now = exec.ms();
    let removed = exec.data.with_list(&args[1], now, false, |list| {
        let limit = if count == 0 {
            usize::MAX
        } else {
            usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
        };
        let mut removed = 0;
        let positions: Vec<usize> = if count < 0 {
            (0..list.len()).rev().collect()
        } else {
            (0..list.len()).collect()
        };
        let mut doomed = Vec::new();
        for at in positions {
            if removed == limit {
                break;
            }
            if list[at] == *element {
                doomed.push(at);
                removed += 1;
            }
        }
        doomed.sort_unstable();
        for at in doomed.into_iter().rev() {
            list.remove(at);
        }
        removed
    });
    let removed = removed.map_err(Frame::error)?.unwrap_or(0);
    Ok(Frame::Integer(len(removed)))
}

fn lrange(exec: &mut Exec<'_>, args: &[Vec<u8>]) -> Reply {
    let start = integer(&args[2])?;
    let stop = integer(&args[3])?;
    read(exec, &args[1], |list| {
        let Some(list) = list else {
            return Frame::Array(Vec::new());
        };
        let length = len(list.len());
        let start = if start < 0 {
            length.saturating_add(start)
        } else {
            start
        }
        .max(0);
        let stop = if stop < 0 {
            length.saturating_add(stop)
        } else {
            stop
        };
        if start > stop || start >= length {
            return Frame::Array(Vec::new());
        }
        let stop = stop.min(length - 1);
        let (start, stop) = (
            usize::try_from(start).unwrap_or_default(),
            usize::try_from(stop).unwrap_or_default(),
        );
        Frame::Array(list.range(start..=stop).map(Frame::bulk).collect())
    })
}
