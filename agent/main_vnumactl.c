/*
 * vnumactl - the command-line client (BRIEF 4.5).  Everything but main() lives in cli.c so
 * that the grammar and the commands can be unit-tested; the libedit line editor of the
 * interactive shell is registered here, so only vnumactl links libedit.
 */
#include <stdio.h>

#include "agent/cli.h"
#include "agent/cmd_top.h"
#include "agent/top_screen.h"
#include "agent/shell_edit.h"

int
main(int argc, char **argv)
{
	cmd_top_screen_set(top_screen_run);
	shell_editor_set(&shell_edit_libedit);
	return cli_run(cli_commands, argc, argv, stdout, stderr);
}
