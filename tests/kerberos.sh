#!/usr/bin/env bash
# RPCSEC_GSS with Kerberos V5 against a real KDC (issue 32): makes a
# realm of its own, FERRITE.TEST, with Debian's krb5-kdc on a loopback
# port (tools/krb5-lib.sh), the server's key table (nfs/localhost), users
# alice and bob with tickets, and a local user ferrite-krb that alice's
# principal is mapped to; then runs crates/e2e/tests/kerberos.rs:
# krb5, krb5i and krb5p reading, writing and locking; export flavor
# lists, SECINFO and NFS4ERR_WRONGSEC; forged, replayed and missing
# tickets; replayed, forged and tampered calls.
#
# Installs krb5-kdc, krb5-admin-server and krb5-user if missing (root,
# apt). Nothing of the host's own Kerberos configuration is used or
# changed: KRB5_CONFIG points at the realm's directory.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
me=kerberos
[ "$(id -u)" = 0 ] || { echo "$me: ERROR: must run as root (a local user for the mapping, apt)" >&2; exit 1; }
. "$top/tools/wait-lib.sh"
. "$top/tools/krb5-lib.sh"
{ ls -1dt /var/tmp/ferrite-krb5.*/ 2>/dev/null || true; } | tail -n +4 | xargs -r rm -rf
work="$(mktemp -d /var/tmp/ferrite-krb5.XXXXXX)"
trap kr_cleanup EXIT
kr_build_deps "$me"
kr_ensure "$me"
port="${FERRITE_KDC_PORT:-18888}"
kr_realm "$me" "$work" "$port"
kr_service "$me" nfs/localhost
kr_user "$me" alice "alice-$$"
kr_user "$me" bob "bob-$$"
kr_kinit "$me" alice "alice-$$" "FILE:$work/alice.cc"
kr_kinit "$me" bob "bob-$$" "FILE:$work/bob.cc"
id ferrite-krb >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin ferrite-krb
uid="$(id -u ferrite-krb)"
echo "$me: realm FERRITE.TEST, KDC on 127.0.0.1:$port, in $work; alice maps to ferrite-krb ($uid)"
FERRITE_KRB5_DIR="$work" FERRITE_KRB5_UID="$uid" KRB5RCACHEDIR="$work" \
    cargo test -p e2e --features kerberos --test kerberos -- --ignored --test-threads=2
