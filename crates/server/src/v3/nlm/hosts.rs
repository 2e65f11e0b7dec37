//! The hosts NLM knows: each client lock manager, named by its address and
//! the `caller_name` it sends (XNFS ch. 10), gets a number, and its lock
//! owners are [`OwnerKey`]s of that number's client id
//! ([`state::nlm::nlm_client`]). Bounded: past [`MAX_HOSTS`],
//! hosts holding nothing are forgotten to make room, and if none is, the
//! request is refused (NLM4_DENIED_NOLOCKS).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use bytes::Bytes;
use proto::nfs4::ClientId4;

use state::nlm::nlm_client;

/// Hosts known at most.
pub const MAX_HOSTS: usize = 4096;

/// A client lock manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub id: u32,
    /// Its `caller_name` (the name its status monitor goes by).
    pub name: Bytes,
    pub addr: IpAddr,
    /// This server's address as the host reached it (the name sent in
    /// SM_NOTIFY after a restart, and where NLM_GRANTED comes from).
    pub server: IpAddr,
}

impl Host {
    /// The client id of its lock owners.
    pub fn client(&self) -> ClientId4 {
        nlm_client(self.id)
    }
}

#[derive(Default)]
struct Table {
    by_key: HashMap<(IpAddr, Bytes), u32>,
    hosts: HashMap<u32, Host>,
    next: u32,
}

/// The host table.
#[derive(Default)]
pub struct Hosts {
    table: Mutex<Table>,
}

impl Hosts {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The host at `addr` calling itself `name`, added if new (reached
    /// through `server`), and the hosts forgotten to make room for it
    /// (whose status monitor records the caller drops); no host when the
    /// table is full of hosts that `busy` says hold something.
    pub fn get_or_add(
        &self,
        addr: IpAddr,
        name: &Bytes,
        server: IpAddr,
        busy: impl Fn(ClientId4) -> bool,
    ) -> (Option<Host>, Vec<Host>) {
        let mut t = self.table();
        if let Some(id) = t.by_key.get(&(addr, name.clone())) {
            return (t.hosts.get(id).cloned(), Vec::new());
        }
        let mut evicted = Vec::new();
        if t.hosts.len() >= MAX_HOSTS {
            evicted = t
                .hosts
                .values()
                .filter(|h| !busy(h.client()))
                .take(MAX_HOSTS / 8 + 1)
                .cloned()
                .collect();
            if evicted.is_empty() {
                return (None, evicted);
            }
            for h in &evicted {
                t.hosts.remove(&h.id);
                t.by_key.remove(&(h.addr, h.name.clone()));
            }
        }
        // Numbers are not reused while the server runs.
        let Some(id) = t.next.checked_add(1) else {
            return (None, evicted);
        };
        t.next = id;
        let h = Host {
            id,
            name: name.clone(),
            addr,
            server,
        };
        t.by_key.insert((addr, name.clone()), h.id);
        t.hosts.insert(h.id, h.clone());
        (Some(h), evicted)
    }

    /// The host with client id `client`.
    pub fn by_client(&self, client: ClientId4) -> Option<Host> {
        self.table().hosts.get(&(client as u32)).cloned()
    }

    /// The hosts at `addr` named `name`.
    pub fn named(&self, addr: IpAddr, name: &[u8]) -> Vec<Host> {
        self.table()
            .hosts
            .values()
            .filter(|h| h.addr == addr && h.name == name)
            .cloned()
            .collect()
    }

    /// Forgets host `id`.
    pub fn remove(&self, id: u32) {
        let mut t = self.table();
        if let Some(h) = t.hosts.remove(&id) {
            t.by_key.remove(&(h.addr, h.name));
        }
    }

    pub fn len(&self) -> usize {
        self.table().hosts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_keyed_by_address_and_name_and_bounded() {
        let h = Hosts::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let n = Bytes::from_static(b"guest");
        let x = h.get_or_add(a, &n, a, |_| true).0.unwrap();
        assert_eq!(h.get_or_add(a, &n, a, |_| true).0.unwrap(), x);
        let y = h.get_or_add(b, &n, a, |_| true).0.unwrap();
        assert_ne!(x.id, y.id);
        assert_eq!(h.named(a, b"guest"), vec![x.clone()]);
        assert_eq!(h.by_client(y.client()), Some(y.clone()));
        // Full of busy hosts: refused; of idle ones: room is made.
        for i in 0..MAX_HOSTS {
            let name = Bytes::from(format!("h{i}"));
            h.get_or_add(a, &name, a, |_| true);
        }
        assert_eq!(h.len(), MAX_HOSTS);
        let (none, evicted) = h.get_or_add(a, &Bytes::from_static(b"new"), a, |_| true);
        assert!(none.is_none() && evicted.is_empty());
        let (some, evicted) = h.get_or_add(a, &Bytes::from_static(b"new"), a, |_| false);
        assert!(some.is_some());
        assert_eq!(evicted.len(), MAX_HOSTS / 8 + 1);
        assert!(evicted.iter().all(|e| h.by_client(e.client()).is_none()));
        assert!(h.len() <= MAX_HOSTS);
        let x = h.named(a, b"guest").pop();
        if let Some(x) = x {
            h.remove(x.id);
        }
        assert!(h.named(a, b"guest").is_empty());
    }
}
