/* libperwine in 22 lines: cc hello-perwine.c $(pkg-config --cflags --libs perwine) */
#include <stdio.h>
#include <unistd.h>
#include <perwine.h>
static long emulate(long nr, const long args[6], void *ctx)
{
	return nr == 39 ? (long)ctx + args[0] : -38;	/* getpid: 1000 + arg; else -ENOSYS */
}
int main(void)
{	/* mov %rdi,%rax; mov %rsi,%rdi; syscall; ret */
	static const unsigned char code[] = { 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x0f, 0x05, 0xc3 };
	void *page;
	if (perwine_enable(PERWINE_THREAD_SELECTOR) || perwine_set_dispatcher(emulate, (void *)1000) ||
	    perwine_map_code(code, sizeof(code), 0, &page))
		return puts("perwine is not available here"), 1;
	printf("PROT_NOSYSCALL page: %ld\n", ((long (*)(long, long))page)(39, 1));
	perwine_trap();
	long trapped = syscall(39, 2L);
	perwine_native();
	printf("selector TRAP: %ld, NATIVE: getpid() = %d\n", trapped, getpid());
	return 0;
}
