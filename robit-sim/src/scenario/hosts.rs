//! The hosts a fault may name, and how their names are read.

use super::Target;
use super::fault::needs;

/// The hosts a fault may name: the scenario's clients, `holder`, `clients`, `backend`
/// (every server), a quorum's servers (`backend1` …, joined with `+`) and `storage`.
pub(crate) struct Hosts<'a> {
    pub(super) clients: &'a [&'a str],
    /// How many backend servers: more than one for a quorum.
    pub(super) servers: usize,
}

impl Hosts<'_> {
    pub(crate) fn target(&self, name: &str) -> Result<Target, String> {
        Ok(match name {
            "holder" => Target::Holder,
            "clients" => Target::Clients,
            "backend" => Target::Backend,
            "storage" => Target::Storage,
            client if self.clients.contains(&client) => Target::Client(client.to_owned()),
            servers if self.servers > 1 && servers.starts_with("backend") => {
                Target::Servers(self.indices(servers)?)
            }
            other => return Err(self.unknown(other)),
        })
    }

    fn unknown(&self, name: &str) -> String {
        let servers = if self.servers > 1 {
            format!(
                ", \"backend\" (every server), \"backend1\" … \"backend{}\" (joined with '+' for several)",
                self.servers
            )
        } else {
            ", \"backend\"".to_owned()
        };
        format!(
            "unknown host {name:?}: expected a client ({}), \"holder\", \"clients\"{servers} or \"storage\"",
            self.clients.join(", ")
        )
    }

    /// `backend2` or `backend1+backend3`: the servers' indices from 0, in order.
    fn indices(&self, names: &str) -> Result<Vec<usize>, String> {
        let mut out = Vec::new();
        for name in names.split('+') {
            let index = name
                .strip_prefix("backend")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=self.servers).contains(n) && super::load::is_server_name(name))
                .ok_or_else(|| self.unknown(name))?;
            if out.contains(&(index - 1)) {
                return Err(format!("{names:?} names server {name:?} twice"));
            }
            out.push(index - 1);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// `host` of a fault on a client; a drift may also name the backend, its servers or
    /// the storage.
    pub(crate) fn client(&self, name: &str, any_host: bool) -> Result<Target, String> {
        match self.target(name)? {
            Target::Backend | Target::Servers(_) | Target::Storage if !any_host => {
                Err(format!("`host` must be a client, not {name:?}"))
            }
            found => Ok(found),
        }
    }

    /// `between`: two different hosts.
    pub(crate) fn two(&self, between: &[String]) -> Result<(Target, Target), String> {
        match between {
            [a, b] if a != b => Ok((self.target(a)?, self.target(b)?)),
            _ => Err(needs("between")),
        }
    }

    /// The links a latency or loss fault is on: those `between` two hosts, or every link.
    pub(crate) fn links(
        &self,
        between: Option<&[String]>,
    ) -> Result<Option<(Target, Target)>, String> {
        between.map(|between| self.two(between)).transpose()
    }

    /// `host` of a backend crash or restart: `backend` (the default, every server) or
    /// some of a quorum's servers.
    pub(crate) fn servers(&self, host: Option<&str>) -> Result<Target, String> {
        match host.map(|host| self.target(host)).transpose()? {
            None | Some(Target::Backend) => Ok(Target::Backend),
            Some(servers @ Target::Servers(_)) => Ok(servers),
            Some(_) => Err(format!(
                "`host` must be \"backend\"{}, not {:?}",
                if self.servers > 1 {
                    format!(
                        " or some of its servers (\"backend1\" … \"backend{}\")",
                        self.servers
                    )
                } else {
                    String::new()
                },
                host.unwrap_or_default()
            )),
        }
    }

    /// A fault that only the whole backend takes.
    pub(crate) fn whole_backend(&self, host: Option<&str>, what: &str) -> Result<(), String> {
        match self.servers(host)? {
            Target::Backend => Ok(()),
            _ => Err(format!("{what} is the whole backend's: drop `host`")),
        }
    }
}
