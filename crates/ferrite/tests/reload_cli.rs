//! `ferrite reload` and SIGHUP against a running `ferrite serve --config`
//! (issue 14, point 4): the edited file's exports and rules apply to a
//! client that stays connected; a file that does not load changes
//! nothing, and `ferrite reload` says why and exits non-zero.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use client::{Client, ClientOptions, OpenOpts};

struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ferrite(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(args)
        .output()
        .expect("ferrite runs")
}

fn write_config(path: &Path, port: u16, dir: &Path, state: &Path, data_ro: bool, extra: &str) {
    let text = format!(
        r#"listen = "127.0.0.1:{port}"
state_dir = "{state}"
portmap = "off"

[[export]]
id = 1
path = "/data"
dir = "{dir}/data"
clients = [{{ match = "127.0.0.1", access = "{access}", squash = "none", secure = false }}]
{extra}
"#,
        state = state.display(),
        dir = dir.display(),
        access = if data_ro { "ro" } else { "rw" },
    );
    std::fs::write(path, text).unwrap();
}

/// Every few milliseconds until `f` holds, for at most 60 s: what it waits
/// for (a server starting, a reload applied) takes well under a second on
/// an idle machine.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < until, "{what}: not within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn exported(state: &Path) -> Vec<String> {
    let out = ferrite(&["exports", "--json", "--state-dir", state.to_str().unwrap()]);
    if !out.status.success() {
        return vec![];
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["path"].as_str().unwrap(),
                e["clients"][0].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn reload_and_sighup_apply_the_edited_configuration() {
    let top = tempfile::tempdir().unwrap();
    let (dir, state, cfg) = (
        top.path(),
        top.path().join("state"),
        top.path().join("ferrite.toml"),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write_config(&cfg, port, dir, &state, false, "");
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(["serve", "--config", cfg.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("ferrite starts");
    let pid = child.id();
    let _serving = Serving(child);
    eventually("the administration socket", || !exported(&state).is_empty());
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = rt
        .block_on(Client::connect(
            addr,
            ClientOptions::new(format!("reload-cli-{}", std::process::id())),
        ))
        .expect("connects");
    let create = |name: &str| {
        rt.block_on(async {
            let d = c.lookup_path("/data").await?;
            let o = c.open(&d, name, OpenOpts::create(0o644)).await?;
            c.close(&o.fh, o.stateid).await.map(|_| ())
        })
    };
    create("before").expect("a rw export");

    // `ferrite reload`: /data read-only for this client, /more added.
    std::fs::create_dir_all(dir.join("more")).unwrap();
    let more = format!(
        "[[export]]\nid = 2\npath = \"/more\"\ndir = \"{}/more\"",
        dir.display()
    );
    write_config(&cfg, port, dir, &state, true, &more);
    let out = ferrite(&["reload", "--state-dir", state.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("reloaded: export /data (id 1) client rules now: 127.0.0.1(ro"),
        "{said}"
    );
    assert!(
        said.contains("reloaded: export /more (id 2) added"),
        "{said}"
    );
    match create("after-ro") {
        Err(e) => assert!(e.to_string().contains("Nfs4errRofs"), "{e}"),
        Ok(()) => panic!("created in a read-only export"),
    }
    let listed = rt.block_on(async {
        let root = c.root_fh().await?;
        c.readdir(&root, &[]).await
    });
    let names: Vec<_> = listed
        .unwrap()
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    assert_eq!(names, ["data", "more"]);

    // SIGHUP: back to rw, /more gone.
    write_config(&cfg, port, dir, &state, false, "");
    // SAFETY: kill(2) on the child this test spawned.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGHUP) }, 0);
    eventually("SIGHUP applied", || {
        exported(&state)
            .iter()
            .map(|s| s.starts_with("/data 127.0.0.1(rw"))
            .eq([true])
    });
    create("after-hup").expect("writable again, on the same connection");
    assert!(dir.join("data/after-hup").exists());

    // A file that does not load: refused, nothing changes.
    std::fs::write(&cfg, "listen = [").unwrap();
    let out = ferrite(&["reload", "--state-dir", state.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("reload refused") && err.contains("does not load"),
        "{err}"
    );
    create("after-refusal").expect("still served as before");
    let out = ferrite(&["stat", "--state-dir", state.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("configuration reloads: 2 applied, 1 refused; last refused"),
        "{shown}"
    );
    let logged = std::fs::read_to_string(dir.join("server.log")).unwrap();
    assert!(
        logged.contains("SIGHUP: reading the configuration again"),
        "{logged}"
    );
    assert!(!logged.contains("panicked"), "{logged}");
}
