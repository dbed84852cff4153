#!/usr/bin/env bash
# curl.sh: builds the static libcurl that flinklet links by default (Makefile: CURL=bundled), from Debian's own
# curl source package (Debian's patches, security fixes included), with only what flinklet uses: HTTP/1.1 over
# http and https, TLS by GnuTLS (the one libmicrohttpd loads) with the system's CA certificates, proxies (a
# remote jar's download honours https_proxy), AWS SigV4 (s3:// jars), the threaded resolver. No other protocol,
# no ssh, ldap, kerberos, rtmp, psl, idn, nghttp2, brotli, zstd or zlib (flinklet asks for no compressed
# answers): none of them is mapped into flinklet any more (docs/performance.md, "The supervisor's footprint").
#
# usage: curl.sh OUTDIR   (the Makefile's $(BUILD)/curl)
#   OUTDIR/apt/          apt's own sources, lists and cache for deb-src (the system's /etc/apt is not touched)
#   OUTDIR/src/VERSION/  the downloaded source package and the logs; its unpacked tree only while it is built
#   OUTDIR/VERSION/      the result: include/curl/*.h and lib/libcurl.a
#   OUTDIR/current       a symlink to the newest VERSION, which the Makefile uses
# The newest version in bookworm, bookworm-updates and bookworm-security wins; a version built before is not built
# again (the Makefile calls this only when OUTDIR/current/lib/libcurl.a is missing; `make curl-refresh` asks for a
# newer source). Without the network, a version built before is kept, else the newest source package downloaded
# before (OUTDIR/src/VERSION/curl_*.dsc, checked against the signed index when apt-get fetched it) is unpacked
# with dpkg-source and built: the container image's build stage runs with no network and gets the host's
# build/curl/src (container/Containerfile). CURL_SUITE picks another Debian release.
set -euo pipefail

out=${1:?usage: curl.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
suite=${CURL_SUITE:-bookworm}
apt="$out/apt"
mkdir -p "$apt/sources.d" "$apt/lists/partial" "$apt/cache/archives/partial"
cat >"$apt/sources.d/debian-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
aptopts=(-q -o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$apt/sources.d"
	-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Dir::Cache::pkgcache=
	-o Dir::Cache::srcpkgcache=)

# the newest source version, or the one built before when the mirror cannot be reached
version=""
offline_dsc=""
if apt-get "${aptopts[@]}" update >"$apt/update.log" 2>&1; then
	for v in $(apt-cache "${aptopts[@]}" showsrc curl 2>/dev/null | sed -n 's/^Version: //p'); do
		if [ -z "$version" ] || dpkg --compare-versions "$v" gt "$version"; then
			version=$v
		fi
	done
fi
if [ -z "$version" ]; then
	if [ -e "$out/current/lib/libcurl.a" ]; then
		touch "$out/current/lib/libcurl.a" # newer than this script: make asks no more
		echo "curl.sh: the Debian mirror answered no curl source ($apt/update.log); keeping $(readlink "$out/current")" >&2
		exit 0
	fi
	for dsc in "$out"/src/*/curl_*.dsc; do
		[ -e "$dsc" ] || continue
		v=$(basename "$(dirname "$dsc")")
		if [ -z "$version" ] || dpkg --compare-versions "$v" gt "$version"; then
			version=$v
			offline_dsc=$dsc
		fi
	done
	if [ -z "$version" ]; then
		echo "curl.sh: no curl source package from the Debian mirror (see $apt/update.log)" >&2
		exit 1
	fi
	echo "curl.sh: the Debian mirror answered no curl source ($apt/update.log); building the one downloaded before, $version" >&2
fi

# Debian's CA setting (its libcurl3-gnutls is configured with the same: the directory, no bundle file); everything flinklet does not use is left out. AWS SigV4
# needs crypto-auth (digest stays with it); NTLM, cookies, netrc, mime, DoH, TLS-SRP go.
confargs=(--disable-shared --enable-static --with-pic
	--with-gnutls --without-openssl
	--with-ca-path=/etc/ssl/certs --without-ca-bundle
	--enable-http --enable-proxy --enable-crypto-auth --enable-threaded-resolver --enable-ipv6
	--disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet
	--disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt
	--disable-ntlm --disable-ntlm-wb --disable-tls-srp --disable-cookies --disable-netrc --disable-mime
	--disable-doh --disable-alt-svc --disable-hsts --disable-manual
	--without-libssh2 --without-libssh --without-wolfssh --without-librtmp --without-libpsl --without-libidn2
	--without-gssapi --without-libgsasl --without-nghttp2 --without-nghttp3 --without-ngtcp2 --without-quiche
	--without-msh3 --without-hyper --without-brotli --without-zstd --without-zlib)

dest="$out/$version"
if [ -e "$dest/lib/libcurl.a" ] && [ "$(cat "$dest/configure.args" 2>/dev/null)" = "${confargs[*]}" ]; then
	ln -sfn "$version" "$out/current"
	touch "$dest/lib/libcurl.a" # newer than this script: make asks no more
	echo "curl.sh: libcurl $version already built ($dest)"
	exit 0
fi

src="$out/src/$version"
# a tree unpacked before is unpacked again (its objects may be of other options); the downloaded files are kept
rm -rf "$dest" "$src"/curl-*/
mkdir -p "$src"
if [ -n "$offline_dsc" ]; then
	# the files apt-get source downloaded before; dpkg-source checks them against the .dsc's checksums
	echo "curl.sh: unpacking Debian's curl $version source (downloaded before)"
	(cd "$src" && dpkg-source -x "$(basename "$offline_dsc")" >unpack.log 2>&1) || {
		cat "$src/unpack.log" >&2
		exit 1
	}
else
	echo "curl.sh: fetching Debian's curl $version source"
	# apt-get source checks each file against the signed Sources index, then dpkg-source unpacks it with the
	# Debian patches applied
	(cd "$src" && apt-get "${aptopts[@]}" -o APT::Sandbox::User=root source "curl=$version" >fetch.log 2>&1) || {
		cat "$src/fetch.log" >&2
		exit 1
	}
fi
tree=$(find "$src" -mindepth 1 -maxdepth 1 -type d -name 'curl-*' | head -n 1)
[ -n "$tree" ] || {
	echo "curl.sh: no unpacked source tree in $src" >&2
	exit 1
}

# configure and the Makefile.in files come from the upstream tarball: Debian's patches to configure.ac and the
# Makefile.am files are for the parts left out here (Kerberos, LDAP, the shared library's name). A patch that
# changed the library's list of sources would need autoreconf: stop rather than build without it.
if grep -lE '^\+\+\+ [^ ]*lib/Makefile\.inc' "$tree"/debian/patches/*.patch >/dev/null 2>&1; then
	echo "curl.sh: a Debian patch changes lib/Makefile.inc; this script does not run autoreconf" >&2
	exit 1
fi

echo "curl.sh: configuring libcurl $version (static, http/https, GnuTLS)"
cd "$tree"
t0=$SECONDS
./configure -q --prefix="$dest" "${confargs[@]}" >"$src/configure.log" 2>&1 || {
	tail -n 30 "$src/configure.log" >&2
	exit 1
}
t1=$SECONDS
echo "curl.sh: building libcurl $version (lib/ only)"
make -s -j"$(nproc)" -C lib >"$src/make.log" 2>&1 || {
	tail -n 30 "$src/make.log" >&2
	exit 1
}
make -s -C lib install >>"$src/make.log" 2>&1
make -s -C include install >>"$src/make.log" 2>&1
printf '%s\n' "${confargs[*]}" >"$dest/configure.args"
ln -sfn "$version" "$out/current"
# the unpacked tree and its objects (160 MB) are not needed any more; the downloaded source stays for a rebuild
cd "$out"
rm -rf "$tree"
echo "curl.sh: libcurl $version in $dest (configure $((t1 - t0)) s, make $((SECONDS - t1)) s)"
