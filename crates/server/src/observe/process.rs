//! This process's figures from /proc/self: CPU time, resident memory,
//! descriptors and their limit, threads (for `ferrite stat`, the metrics
//! and the load model).

use serde::{Deserialize, Serialize};

/// The server process, from /proc/self.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Process {
    /// User and system CPU time.
    pub cpu_s: f64,
    pub resident_bytes: u64,
    pub open_fds: u64,
    pub max_fds: u64,
    pub threads: u64,
}

/// This process's figures from /proc/self (zeros where unreadable).
pub fn process() -> Process {
    // SAFETY: sysconf has no preconditions.
    let (tck, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK).max(1) as f64,
            libc::sysconf(libc::_SC_PAGESIZE).max(1) as u64,
        )
    };
    let mut p = Process::default();
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // After the command's closing parenthesis: state is field 3, so
        // utime (14), stime (15) and num_threads (20) are at 11, 12, 17.
        if let Some((_, rest)) = stat.rsplit_once(')') {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            p.cpu_s = (num(11) + num(12)) as f64 / tck;
            p.threads = num(17);
        }
    }
    if let Ok(statm) = std::fs::read_to_string("/proc/self/statm") {
        let rss = statm
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok());
        p.resident_bytes = rss.unwrap_or(0) * page;
    }
    p.open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        p.max_fds = lim.rlim_cur;
    }
    p
}
