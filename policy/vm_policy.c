/* vm_policy.c - placeholder while the parser is written (replaced before anything lands). */
#include "policy/vm_policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/util.h"

void
vm_policy_init_default(struct vm_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->mode = VM_POLICY_MODE_AUTO;
	pol->nodes = NODEMASK_ALL;
	pol->migrate = true;
	pol->priority = VM_POLICY_PRIORITY_DEF;
}
