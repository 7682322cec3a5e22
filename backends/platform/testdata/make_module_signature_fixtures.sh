#!/usr/bin/env bash
# Writes the module-signature fixtures of //backends/platform:platform_test into this folder,
# with the openssl CLI the way dkms and scripts/sign-file.c sign a module: a self-signed key
# (dkms 3.0.10's: CN "DKMS module signing key"), a detached DER PKCS#7 (CMS) signature over the
# module's bytes without attributes or certificates, sha256, then the 12-byte
# struct module_signature (id_type 2 = PKCS#7, sig_len big-endian; include/linux/
# module_signature.h) and the magic "~Module signature appended~\n".
#   module_body.ko            the bytes signed (a stand-in for an ELF module), unsigned
#   signed_issuer.ko          signed, the signer named by issuer and serial (sign-file's default)
#   signed_keyid.ko           signed, the signer named by subjectKeyIdentifier (sign-file -k)
#   signed_issuer.ko.xz/.zst/.gz   signed_issuer.ko compressed as kmod/dkms compress modules
#   signer_serial.txt         the certificate's serial in lower hex (what the parser must read)
#   signer_keyid.txt          its subjectKeyIdentifier in lower hex
# Checked: Debian's scripts/sign-file (linux-kbuild-6.1) writes byte-identical PKCS#7 and trailer
# for the same key and bytes. The private key is thrown away; the fixtures are regenerated whole
# (new key, new serial).
# usage: backends/platform/testdata/make_module_signature_fixtures.sh
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -new -x509 -nodes -days 36500 -newkey rsa:2048 -subj "/CN=DKMS module signing key" \
  -keyout "$work/mok.key" -out "$work/mok.pem" 2>/dev/null
printf '\177ELF\002\001\001\000resmem fixture: the bytes a module signature covers\n' > module_body.ko

# $1 output, $2...: extra openssl cms options
sign() {
  local out=$1; shift
  openssl cms -sign -binary -noattr -nocerts -outform DER -md sha256 -signer "$work/mok.pem" \
    -inkey "$work/mok.key" -in module_body.ko -out "$work/sig.p7s" "$@"
  local n
  n=$(stat -c %s "$work/sig.p7s")
  {
    cat module_body.ko "$work/sig.p7s"
    printf '\000\000\002\000\000\000\000\000'
    printf "\\x$(printf %02x $(((n >> 24) & 255)))\\x$(printf %02x $(((n >> 16) & 255)))"
    printf "\\x$(printf %02x $(((n >> 8) & 255)))\\x$(printf %02x $((n & 255)))"
    printf '~Module signature appended~\n'
  } > "$out"
}
sign signed_issuer.ko
sign signed_keyid.ko -keyid

rm -f signed_issuer.ko.xz signed_issuer.ko.zst signed_issuer.ko.gz
xz -k -C crc32 signed_issuer.ko          # kmod's xz modules use crc32 (scripts/Makefile.modinst)
zstd -q -k signed_issuer.ko
gzip -k -n signed_issuer.ko

openssl x509 -in "$work/mok.pem" -noout -serial | sed 's/^serial=//' | tr 'A-F' 'a-f' > signer_serial.txt
openssl x509 -in "$work/mok.pem" -noout -ext subjectKeyIdentifier | tail -1 | tr -d ' :' |
  tr 'A-F' 'a-f' > signer_keyid.txt
echo "wrote: $(ls module_body.ko signed_* signer_*.txt | tr '\n' ' ')"
