//! The scripts the differential test sends that are not robit's: another lock's, and
//! scripts that reach every kind of value, error, and sandbox rule.

use rand::RngExt;
use rand::rngs::StdRng;

use super::{Check, OTHER, OWNERS, Step, pick};

/// Scripts that are not robit's: `(name, text)`, each called with a lock's key, its
/// queue's key and a key of their own as KEYS (not robit's counter, whose values follow
/// each server's clock), and an owner and a TTL as ARGV.
pub(crate) const OTHER_SCRIPTS: [(&str, &str); 14] = [
    (
        "set-nx-px lock",
        "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end\n\
         return 0",
    ),
    (
        "compare-and-delete",
        "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\n\
         end\nreturn 0",
    ),
    (
        "compare-and-extend",
        "if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n\
         return redis.call('PEXPIRE', KEYS[1], ARGV[2])",
    ),
    (
        "every kind of value",
        "return {1, 'two', {3, {4}}, redis.call('EXISTS', KEYS[1]), false, 3.7, -2.5, true}",
    ),
    (
        "status and error replies",
        "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.status_reply('HELD') end\n\
         return redis.error_reply('FREE nobody holds ' .. KEYS[1])",
    ),
    (
        "pcall's error table",
        "local r = redis.pcall('INCR', KEYS[1])\n\
         if type(r) == 'table' and r.err then return 'caught: ' .. r.err end\nreturn r",
    ),
    (
        "a failing call on a later line",
        "local function bump(key)\n  return redis.call('INCR', key)\nend\n\
         local n = bump(KEYS[3])\nreturn {n, bump(KEYS[1])}",
    ),
    (
        "a runtime error",
        "local owner = ARGV[1]\nreturn owner + redis.call('LLEN', KEYS[2])",
    ),
    ("an unknown global", "return {KEYS[1], undefined_thing}"),
    (
        "a global written",
        "counter = (counter or 0) + 1\nreturn counter",
    ),
    ("a compile error", "return ("),
    (
        "string and table libraries",
        "local t = {}\nfor i = 1, #ARGV do table.insert(t, string.format('%s=%d', ARGV[i], #ARGV[i])) end\n\
         table.sort(t)\nreturn {table.concat(t, ','), string.rep('ab', 3), string.upper(KEYS[1]), \
         tostring(7 / 3), redis.sha1hex(ARGV[1])}",
    ),
    (
        "numbers as arguments",
        "redis.call('SET', KEYS[3] .. ':n', 12.5)\nredis.call('SET', KEYS[3] .. ':m', 1e20)\n\
         return {redis.call('GET', KEYS[3] .. ':n'), redis.call('GET', KEYS[3] .. ':m'), \
         redis.call('INCR', KEYS[3] .. ':c')}",
    ),
    (
        "calls not allowed and unknown",
        "local r = {redis.pcall('SUBSCRIBE', 'x'), redis.pcall('NOSUCH'), redis.pcall('GET')}\n\
         return {r[1].err, r[2].err, r[3].err, redis.pcall('SET', 'k').err}",
    ),
];

pub(crate) fn other_script(rng: &mut StdRng, lock: String, queue: String) -> Step {
    let (name, text) = OTHER_SCRIPTS[rng.random_range(0..OTHER_SCRIPTS.len())];
    let ttl = pick(rng, &["60000", "120000", "x"]).to_owned();
    Step::Script {
        name,
        text,
        keys: vec![lock, queue, OTHER.to_owned()],
        args: vec![pick(rng, &OWNERS).to_owned(), ttl],
        eval: rng.random_bool(0.3),
        check: Check::Exact,
    }
}
