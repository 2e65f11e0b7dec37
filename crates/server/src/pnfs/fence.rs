//! Fencing (RFC 8435 §2.2): a layout that ended without being returned
//! (its recall unanswered for a lease, its client's lease run out, the
//! client unreachable) may still be used by its holder, so the file's
//! data files change owner (the next fence generation) and the holder's
//! writes are refused by the data servers. Then the file's size is
//! learnt from them: what the holder wrote past the end without a
//! LAYOUTCOMMIT is kept.

use std::sync::Arc;

use state::layouts::LayoutLost;

use crate::instance::Server;

/// Has the server's state hand lost layouts to [`fence`].
pub fn install(srv: &Arc<Server>) {
    let weak = Arc::downgrade(srv);
    srv.state().on_layouts_lost(Box::new(move |lost| {
        let Some(srv) = weak.upgrade() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("{} layouts lost with no runtime to fence them", lost.len());
            return;
        };
        rt.spawn(fence_all(srv, lost));
    }));
}

async fn fence_all(srv: Arc<Server>, lost: Vec<LayoutLost>) {
    for l in lost {
        fence(&srv, &l).await;
    }
    srv.deleg_gone.notify_waiters();
}

/// Fences the file of one lost layout and learns its size.
pub async fn fence(srv: &Arc<Server>, l: &LayoutLost) {
    let Some(pnfs) = srv.exports().get(l.file.0).and_then(|e| e.pnfs.clone()) else {
        return;
    };
    let h = l.file.1.clone();
    match pnfs.fence(&h).await {
        Ok(gen) => tracing::info!(client = l.client, gen, "layout lost: file fenced"),
        Err(e) => tracing::warn!(client = l.client, "layout lost: fencing failed: {e}"),
    }
    if !l.rw {
        return;
    }
    let size = match pnfs.data_size(&h).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("layout lost: size not learnt from the data servers: {e}");
            return;
        }
    };
    let meta = pnfs.meta.clone();
    let handle = vfs::Handle(h);
    let _ = crate::handoff::off_thread(move || {
        let a = meta.getattr(&handle)?;
        if size > a.size {
            let set = vfs::SetAttr {
                size: Some(size),
                mtime: Some(vfs::SetTime::ServerNow),
                ..vfs::SetAttr::default()
            };
            meta.setattr(&vfs::Creds::root(), &handle, &set)?;
        }
        Ok::<(), vfs::Errno>(())
    })
    .await;
}
