/*
 * vnumactl - the command-line client (BRIEF 4.5).  Everything but main() lives in cli.c so
 * that the grammar and the commands can be unit-tested.
 */
#include <stdio.h>

#include "agent/cli.h"

int
main(int argc, char **argv)
{
	return cli_run(cli_commands, argc, argv, stdout, stderr);
}
