//! `crashfs MOUNTPOINT`: mounts an empty crashfs there and serves it until
//! SIGINT or SIGTERM (then unmounts). SIGUSR1 is a power loss: everything
//! not made durable by fsync is dropped. Needs root and /dev/fuse.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = &args[..] else {
        eprintln!("usage: crashfs MOUNTPOINT   (SIGUSR1: power loss; SIGINT/SIGTERM: unmount)");
        std::process::exit(2);
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
    let fs = match crashfs::Mounted::mount(std::path::Path::new(path)) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("crashfs: mount {path}: {e} (needs root and /dev/fuse)");
            std::process::exit(1);
        }
    };
    eprintln!("crashfs: mounted on {path}; SIGUSR1 drops what is not durable");
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
