//! `crashfs [--sync-delay-ms N] MOUNTPOINT`: mounts an empty crashfs there
//! and serves it until SIGINT or SIGTERM (then unmounts). SIGUSR1 is a
//! power loss: everything not made durable by fsync is dropped. With
//! `--sync-delay-ms`, a slow disk: each fsync or fdatasync is answered N
//! ms after the one before it (one at a time). Needs root and /dev/fuse.

const USAGE: &str = "usage: crashfs [--sync-delay-ms N] MOUNTPOINT   (SIGUSR1: power loss; SIGINT/SIGTERM: unmount)";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (delay, path) = match &args[1..] {
        [path] => (0, path),
        [flag, n, path] if flag == "--sync-delay-ms" => {
            match n.parse::<u64>() {
                Ok(n) if n <= 10_000 => (n, path),
                _ => {
                    eprintln!("crashfs: --sync-delay-ms takes milliseconds, 0 to 10000, not {n:?}\n{USAGE}");
                    std::process::exit(2);
                }
            }
        }
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    // Block the signals in every thread (the FUSE session's too) before
    // any starts, then take them one at a time here.
    // SAFETY: a sigset_t filled by sigemptyset/sigaddset; pthread_sigmask
    // and sigwait are given valid pointers.
    let set = unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let delay = std::time::Duration::from_millis(delay);
    let fs = match crashfs::Mounted::mount_with(std::path::Path::new(path), delay) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("crashfs: mount {path}: {e} (needs root and /dev/fuse)");
            std::process::exit(1);
        }
    };
    eprintln!(
        "crashfs: mounted on {path} (syncs answered after {delay:?}); SIGUSR1 drops what is not durable"
    );
    loop {
        let mut sig = 0;
        // SAFETY: see above.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            continue;
        }
        if sig == libc::SIGUSR1 {
            fs.power_loss();
            eprintln!("crashfs: power loss: {:?}", fs.stats());
        } else {
            break;
        }
    }
    drop(fs);
    eprintln!("crashfs: unmounted {path}");
}
