//! SEEK (RFC 7862 §15.11).

use proto::nfs4::*;

use crate::nfs4::check::regular;
use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: Seek4Args) -> Seek4Res {
    seek(cx, args).await.into()
}

async fn seek(cx: &mut Compound, args: Seek4Args) -> Result<SeekRes4, NfsStat4> {
    if cx.minorversion < 2 {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    let fh = cx.cfh()?.clone();
    let special = cx.check_io(&args.stateid, OPEN4_SHARE_ACCESS_READ)?;
    let what = match args.what {
        DataContent4::Nfs4ContentData => vfs::SeekWhat::Data,
        DataContent4::Nfs4ContentHole => vfs::SeekWhat::Hole,
    };
    let handle = fh.handle.clone();
    let offset = args.offset;
    cx.vfs(fh.export, move |v, c| {
        if special {
            if let Err(s) = regular(&v.getattr(&handle)?) {
                return Ok(Err(s));
            }
        }
        let found = v.seek(c, &handle, offset, what)?;
        let size = v.getattr(&handle)?.size;
        Ok(match found {
            // §15.11.3: the offset found, and whether it is the end.
            Some(o) => Ok(SeekRes4 {
                eof: o >= size,
                offset: o,
            }),
            // Nothing found inside the file: not an error, but eof.
            None if offset < size => Ok(SeekRes4 {
                eof: true,
                offset: size,
            }),
            // Starting at or past the end (§15.11.3): NFS4ERR_NXIO.
            None => Err(NfsStat4::Nfs4errNxio),
        })
    })
    .await?
}
