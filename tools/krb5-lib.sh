# shellcheck shell=bash
# Sourced by the Kerberos tests: a realm of their own, FERRITE.TEST, its
# KDC (Debian's krb5-kdc) on a port of loopback, for the length of a test.
#
#   kr_build_deps ME        installs libkrb5-dev and libclang-dev if
#                           missing: what building the `kerberos` feature
#                           needs (GSS-API headers; libclang for bindgen)
#   kr_ensure ME            installs krb5-kdc, krb5-admin-server and
#                           krb5-user if missing (root, apt); fails loudly
#                           when it cannot
#   kr_realm ME DIR PORT    makes the realm's database, configuration and
#                           KDC in DIR (KDC on PORT, TCP and UDP); exports
#                           KRB5_CONFIG for everything started after
#   kr_service ME PRINC...  adds service principals (random keys) and puts
#                           their keys in DIR/nfs.keytab
#   kr_user ME NAME PASS    adds a user principal
#   kr_kinit ME NAME PASS CCACHE
#                           a ticket for NAME in the cache CCACHE
#   kr_cleanup              stops the KDC
#
# Every file lives in DIR: the host's /etc/krb5.conf is never touched.

KR_DIR="" KR_PID="" KR_REALM=FERRITE.TEST

kr_build_deps() {
    local me=$1
    dpkg -s libkrb5-dev libclang-dev >/dev/null 2>&1 && return 0
    echo "$me: installing libkrb5-dev and libclang-dev (to build the kerberos feature)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libkrb5-dev libclang-dev >/dev/null ||
        { echo "$me: could not install libkrb5-dev and libclang-dev (apt-get), which building the kerberos feature needs" >&2; return 1; }
}

kr_ensure() {
    local me=$1
    if ! command -v krb5kdc >/dev/null || ! command -v kadmin.local >/dev/null || ! command -v kinit >/dev/null; then
        echo "$me: installing Kerberos (krb5-kdc, krb5-admin-server, krb5-user)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q krb5-kdc krb5-admin-server krb5-user >/dev/null ||
            { echo "$me: the Kerberos KDC is not installed and could not be (apt-get install krb5-kdc krb5-admin-server krb5-user)" >&2; return 1; }
    fi
    # Debian's packages start a KDC for the host's own realm: not ours.
    command -v krb5kdc >/dev/null || { echo "$me: no krb5kdc after installing" >&2; return 1; }
}

kr_realm() {
    local me=$1 dir=$2 port=$3
    KR_DIR=$dir
    mkdir -p "$dir"
    cat >"$dir/krb5.conf" <<CONF
[libdefaults]
    default_realm = $KR_REALM
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    ignore_acceptor_hostname = true
    default_ccache_name = FILE:$dir/default.cc
[realms]
    $KR_REALM = {
        kdc = 127.0.0.1:$port
    }
[domain_realm]
    localhost = $KR_REALM
    .ferrite.test = $KR_REALM
    ferrite.test = $KR_REALM
CONF
    cat >"$dir/kdc.conf" <<CONF
[kdcdefaults]
    kdc_listen = 127.0.0.1:$port
    kdc_tcp_listen = 127.0.0.1:$port
[realms]
    $KR_REALM = {
        database_name = $dir/principal
        key_stash_file = $dir/stash
        acl_file = $dir/kadm5.acl
        max_life = 10h
        max_renewable_life = 1d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:$dir/kdc.log
CONF
    : >"$dir/kadm5.acl"
    export KRB5_CONFIG=$dir/krb5.conf KRB5_KDC_PROFILE=$dir/kdc.conf
    if [ ! -e "$dir/principal" ]; then
        kdb5_util create -s -r "$KR_REALM" -P "ferrite-master-$$" >"$dir/kdb.log" 2>&1 ||
            { echo "$me: kdb5_util could not make the realm's database ($dir/kdb.log):" >&2; cat "$dir/kdb.log" >&2; return 1; }
    fi
    krb5kdc -n -P "$dir/kdc.pid" >>"$dir/kdc.out" 2>&1 &
    KR_PID=$!
    kr_up() { kill -0 "$KR_PID" 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
    wait_until 30 kr_up || { echo "$me: the KDC did not listen on 127.0.0.1:$port within 30 s ($dir/kdc.out):" >&2; cat "$dir/kdc.out" >&2; return 1; }
}

kr_admin() {
    kadmin.local -r "$KR_REALM" -q "$1" >>"$KR_DIR/kadmin.log" 2>&1
}

kr_service() {
    local me=$1 p
    shift
    for p in "$@"; do
        kr_admin "addprinc -randkey $p@$KR_REALM" || { echo "$me: could not add $p" >&2; return 1; }
        kr_admin "ktadd -k $KR_DIR/nfs.keytab $p@$KR_REALM" || { echo "$me: could not put $p's keys in $KR_DIR/nfs.keytab" >&2; return 1; }
    done
}

kr_user() {
    local me=$1 name=$2 pass=$3
    kr_admin "addprinc -pw $pass $name@$KR_REALM" || { echo "$me: could not add $name" >&2; return 1; }
}

kr_kinit() {
    local me=$1 name=$2 pass=$3 cc=$4
    echo "$pass" | KRB5CCNAME=$cc kinit "$name@$KR_REALM" >/dev/null 2>>"$KR_DIR/kinit.log" ||
        { echo "$me: kinit $name failed ($KR_DIR/kinit.log)" >&2; cat "$KR_DIR/kinit.log" >&2; return 1; }
}

kr_cleanup() {
    [ -n "$KR_PID" ] && kill "$KR_PID" 2>/dev/null && wait "$KR_PID" 2>/dev/null
    KR_PID=""
}
