#!/bin/sh
# perwine.h compiles as strict ISO C11 (-std=c11 -pedantic), alone and
# with a patched kernel's <linux/personality.h> (PER_WINE is an enum
# member there) included before or after it; in the guest also with
# that kernel's real uapi headers.  Needs no perwine kernel.
. "${top_srcdir:-.}/tests/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inc=${top_srcdir:-.}/userland/include
cc=${CC:-cc}
flags="-std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only"

# A stand-in for the patched uapi header, as the series writes it.
mkdir -p "$tmp/fake/linux"
cat > "$tmp/fake/linux/personality.h" <<'EOH'
#ifndef _LINUX_PERSONALITY_H
#define _LINUX_PERSONALITY_H
enum { PER_LINUX = 0x0000, PER_WINE = 0x0011, PER_MASK = 0x00ff };
#endif
EOH

unit() {
	printf '%s\n' "$@" 'static const siginfo_t *info;' \
		'int main(void) { (void)info; perwine_trap(); perwine_native(); return PERWINE_PER_WINE == 0x11 ? 0 : 1; }'
}
compile() {
	# shellcheck disable=SC2086
	$cc $flags -I"$inc" "$@" -x c - 2> "$tmp/cc.log"
	rc=$?
	sed 's/^/# /' "$tmp/cc.log"
	return $rc
}
checks=4
[ -f "${KSELFTESTS:-/nonexistent}/usr/include/linux/personality.h" ] && checks=6
tap_plan $checks

unit '#include <perwine.h>' | compile
tap_check "perwine.h alone under -std=c11 -pedantic" test $? -eq 0
unit '#include <linux/personality.h>' '#include <perwine.h>' \
	'_Static_assert(PER_WINE == PERWINE_PER_WINE, "PER_WINE");' | compile -I"$tmp/fake"
tap_check "a patched <linux/personality.h>, then perwine.h" test $? -eq 0
unit '#include <perwine.h>' '#include <linux/personality.h>' \
	'_Static_assert(PER_WINE == PERWINE_PER_WINE, "PER_WINE");' | compile -I"$tmp/fake"
tap_check "perwine.h, then a patched <linux/personality.h>" test $? -eq 0
unit '#include <perwine.h>' '#include <sys/personality.h>' | compile
tap_check "perwine.h with glibc's <sys/personality.h>" test $? -eq 0
if [ "$checks" -eq 6 ]; then
	unit '#include <linux/personality.h>' '#include <perwine.h>' \
		'_Static_assert(PER_WINE == PERWINE_PER_WINE, "PER_WINE");' |
		compile -isystem "$KSELFTESTS/usr/include"
	tap_check "the perwine kernel's own <linux/personality.h>, then perwine.h" test $? -eq 0
	unit '#include <perwine.h>' '#include <linux/personality.h>' '#include <linux/prctl.h>' \
		'_Static_assert(PR_WINE_DISPATCH_SET == 3, "SET");' |
		compile -isystem "$KSELFTESTS/usr/include"
	tap_check "perwine.h, then the kernel's <linux/personality.h> and <linux/prctl.h>" test $? -eq 0
fi
