/* vnumactl - placeholder main while the CLI is written. */
#include <stdio.h>

int
main(void)
{
	fprintf(stderr, "error: not built yet\n");
	return 1;
}
