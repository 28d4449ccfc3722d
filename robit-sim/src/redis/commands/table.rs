//! The commands this server knows, each named once: its name, Redis's arity and its
//! subcommands, and how a command's arguments are checked against them before it runs —
//! unknown name, unknown subcommand, wrong number of arguments — with Redis's error
//! texts.

use crate::redis::exec::wrong_arity;
use crate::redis::resp::Frame;

/// The commands, each as [`Command`]'s variant, its lower-case name and Redis's arity:
/// positive is exact, negative a minimum (both count the command's name).
macro_rules! commands {
    ($($variant:ident $name:literal $arity:literal,)*) => {
        /// A command this server knows, as [`check`] found it named.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Command {
            $($variant,)*
        }

        /// Every command, with its name and arity.
        const COMMANDS: &[(Command, &str, i64)] = &[$((Command::$variant, $name, $arity),)*];

        impl Command {
            /// The command's lower-case name, as Redis's error replies quote it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }
    };
}

commands! {
    Auth "auth" -2,
    Client "client" -2,
    Dbsize "dbsize" 1,
    Del "del" -2,
    Echo "echo" 2,
    Eval "eval" -3,
    Evalsha "evalsha" -3,
    Exists "exists" -2,
    Flushall "flushall" -1,
    Get "get" 2,
    Getdel "getdel" 2,
    Hello "hello" -1,
    Incr "incr" 2,
    Info "info" -1,
    Lindex "lindex" 3,
    Llen "llen" 2,
    Lpop "lpop" -2,
    Lpos "lpos" -3,
    Lpush "lpush" -3,
    Lrange "lrange" 4,
    Lrem "lrem" 4,
    Pexpire "pexpire" -3,
    Pexpireat "pexpireat" -3,
    Ping "ping" -1,
    Psubscribe "psubscribe" -2,
    Pttl "pttl" 2,
    Publish "publish" 3,
    Punsubscribe "punsubscribe" -1,
    Quit "quit" -1,
    Reset "reset" 1,
    Rpush "rpush" -3,
    Script "script" -2,
    Select "select" 2,
    Set "set" -3,
    Subscribe "subscribe" -2,
    Time "time" 1,
    Type "type" 2,
    Unsubscribe "unsubscribe" -1,
}

impl Command {
    /// Whether a script may call it (Redis's `noscript` commands, among those known
    /// here, may not).
    pub(crate) fn allowed_in_scripts(self) -> bool {
        !matches!(
            self,
            Self::Auth
                | Self::Client
                | Self::Eval
                | Self::Evalsha
                | Self::Hello
                | Self::Psubscribe
                | Self::Punsubscribe
                | Self::Quit
                | Self::Reset
                | Self::Script
                | Self::Subscribe
                | Self::Unsubscribe
        )
    }
}

/// Subcommands of the container commands, with their arity.
const SUBCOMMANDS: &[(Command, &str, i64)] = &[
    (Command::Client, "getname", 2),
    (Command::Client, "id", 2),
    (Command::Client, "setinfo", 4),
    (Command::Client, "setname", 3),
    (Command::Script, "exists", -3),
    (Command::Script, "flush", -2),
    (Command::Script, "kill", 2),
    (Command::Script, "load", 3),
];

/// Why a command was refused before it ran.
pub(super) enum Refused {
    Empty,
    UnknownCommand,
    UnknownSubcommand,
    /// Wrong number of arguments for the command (`name|sub` for a subcommand).
    Arity(String),
}

/// The known command (and subcommand) `args` names, with an acceptable number of
/// arguments.
pub(super) fn lookup(args: &[Vec<u8>]) -> Result<Command, Refused> {
    let first = args.first().ok_or(Refused::Empty)?;
    let name = String::from_utf8_lossy(first).to_ascii_lowercase();
    let &(command, _, arity) = COMMANDS
        .iter()
        .find(|(_, known, _)| *known == name)
        .ok_or(Refused::UnknownCommand)?;
    let subcommands: Vec<_> = SUBCOMMANDS
        .iter()
        .filter(|(of, ..)| *of == command)
        .collect();
    let (full, arity) = match (subcommands.is_empty(), args.get(1)) {
        (false, Some(sub)) => {
            let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
            let &&(_, _, arity) = subcommands
                .iter()
                .find(|(_, known, _)| *known == sub)
                .ok_or(Refused::UnknownSubcommand)?;
            (format!("{name}|{sub}"), arity)
        }
        _ => (name, arity),
    };
    let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
    if (arity > 0 && argc != arity) || argc < arity.abs() {
        return Err(Refused::Arity(full));
    }
    Ok(command)
}

/// Checks that `args` names a known command (and subcommand) with an acceptable number
/// of arguments; answers the command, or the error Redis would reply.
pub(crate) fn check(args: &[Vec<u8>]) -> Result<Command, Frame> {
    lookup(args).map_err(|refused| match refused {
        Refused::Empty => Frame::error("ERR empty command"),
        Refused::UnknownCommand => unknown_command(args),
        Refused::UnknownSubcommand => unknown_subcommand(args),
        Refused::Arity(full) => wrong_arity(&full),
    })
}

fn unknown_command(args: &[Vec<u8>]) -> Frame {
    let mut message = b"ERR unknown command '".to_vec();
    message.extend(args[0].iter().take(128));
    message.extend_from_slice(b"', with args beginning with: ");
    let mut listed = 0;
    for arg in &args[1..] {
        if listed >= 128 {
            break;
        }
        let shown = arg.len().min(128 - listed);
        message.push(b'\'');
        message.extend_from_slice(&arg[..shown]);
        message.extend_from_slice(b"' ");
        listed += shown + 3;
    }
    Frame::Error(message)
}

fn unknown_subcommand(args: &[Vec<u8>]) -> Frame {
    let mut message = b"ERR unknown subcommand '".to_vec();
    message.extend(args[1].iter().take(128));
    message.extend_from_slice(b"'. Try ");
    message.extend(args[0].to_ascii_uppercase());
    message.extend_from_slice(b" HELP.");
    Frame::Error(message)
}
