/* bochscpu-python 0.4.0's native module was built against glibc >= 2.38, where the C23
 * headers redirect strtoull and sscanf to __isoc23_strtoull and __isoc23_sscanf. Older
 * glibc (Debian 12 has 2.36) lacks both, so the module fails to load. These forwarders
 * supply them; the only C23 difference (accepting "0b" binary literals) does not matter
 * to the emulator. setup.sh builds this only when the module cannot load without it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

unsigned long long __isoc23_strtoull(const char *s, char **end, int base) {
    return strtoull(s, end, base);
}

int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsscanf(s, format, ap);
    va_end(ap);
    return n;
}
