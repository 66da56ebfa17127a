/*
 * daemon_harness.h - a vnumad daemon of its own for a unit test (agent/daemon.c on the
 * simulated host), in a fresh temporary directory holding its socket, state file and policy
 * directory; rounds run as daemon_run() runs them, and handlers are called as the control
 * server calls them.
 *
 * Included by the test_daemon_*.c tests only: everything here is static.  Needs cmocka's
 * headers and agent/daemon.h included first.
 */
#ifndef VNUMAD_TESTS_DAEMON_HARNESS_H
#define VNUMAD_TESTS_DAEMON_HARNESS_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/config.h"
#include "agent/daemon.h"
#include "agent/handlers.h"

struct tdaemon {
	char dir[64];
	struct daemon d;
};

static void
put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/*
 * A daemon on the simulated host of scenario ("default": the built-in 4-node one) with the
 * host profile's levers, with policy file NAME.xml holding text when name is not NULL.
 */
static void
tdaemon_start_profile(struct tdaemon *t, const char *scenario, enum sim_profile profile,
                      const char *name, const char *text)
{
	struct daemon *d = &t->d;
	char path[PATH_MAX + 64], err[1024] = "";

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/vnumad-dn-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	config_defaults(&d->cfg);
	snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path), "%s/sock", t->dir);
	snprintf(d->cfg.state_file, sizeof(d->cfg.state_file), "%s/state.json", t->dir);
	snprintf(d->cfg.policy_dir, sizeof(d->cfg.policy_dir), "%s/policy.d", t->dir);
	assert_int_equal(mkdir(d->cfg.policy_dir, 0700), 0);
	if (name != NULL) {
		snprintf(path, sizeof(path), "%s/%s.xml", d->cfg.policy_dir, name);
		put_file(path, text);
	}
	d->lock_fd = -1;
	d->simulate = true;
	snprintf(d->scenario, sizeof(d->scenario), "%s", scenario);
	d->speed = 1.0;
	d->host_profile = profile;
	if (daemon_init(d, err, sizeof(err)) < 0)
		fail_msg("daemon_init: %s", err);
}

/*
 * A daemon on the scenario given as JSON text, under the host profile: the text goes to a
 * file of its own for the start (the scenario is read then) and is removed after.
 */
static void __attribute__((unused))
tdaemon_start_text(struct tdaemon *t, const char *scenario_json, enum sim_profile profile)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/vnumad-scn-%d.json", (int)getpid());
	put_file(path, scenario_json);
	tdaemon_start_profile(t, path, profile, NULL, NULL);
	unlink(path);
}

/* tdaemon_start_profile under the linux profile (the simulated host's default). */
static void __attribute__((unused))
tdaemon_start(struct tdaemon *t, const char *scenario, const char *name, const char *text)
{
	tdaemon_start_profile(t, scenario, SIM_PROFILE_LINUX, name, text);
}

static void
tdaemon_stop(struct tdaemon *t)
{
	char cmd[128];

	daemon_fini(&t->d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
}

/* Rounds as daemon_run() makes them: the host a second on, then observe-decide-act. */
static void
tdaemon_rounds(struct tdaemon *t, int n)
{
	struct host *h = t->d.host;

	for (int i = 0; i < n; i++) {
		assert_true(h->ops->advance(h, h->ops->now(h) + 1.0) >= 0);
		assert_int_equal(daemon_round(&t->d), 0);
	}
}

__attribute__((unused)) static const struct snap_vm *
tdaemon_vm(const struct tdaemon *t, const char *name)
{
	const struct snap_vm *vm = daemon_snap_vm(&t->d, name);

	assert_non_null(vm);
	return vm;
}

/*
 * Call a handler as the control server does, for a peer that may write, with args (consumed;
 * NULL: none): its status; the reply (put by the caller) in *data on success, else the
 * message in err.
 */
static enum proto_status
tdaemon_call(struct tdaemon *t, control_handler_fn fn, struct json_object *args,
             struct json_object **data, char *err, size_t errlen)
{
	const struct control_peer peer = {.may_write = true};
	enum proto_status st;

	if (args == NULL)
		args = json_object_new_object();
	*data = NULL;
	err[0] = '\0';
	st = fn(&t->d, NULL, &peer, args, data, err, errlen);
	json_object_put(args);
	return st;
}

/* The handler of a command of the daemon's table (daemon_commands). */
static control_handler_fn __attribute__((unused)) tdaemon_handler(const char *name)
{
	for (const struct control_command *c = daemon_commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c->fn;
	fail_msg("no command %s", name);
	return NULL;
}

/* `vnumactl policy VM --KEY VALUE`, as tdaemon_call(). */
static enum proto_status __attribute__((unused))
tdaemon_policy(struct tdaemon *t, const char *vm, const char *key, const char *value,
               struct json_object **data, char *err, size_t errlen)
{
	struct json_object *args = json_object_new_object();

	json_object_object_add(args, "vm", json_object_new_string(vm));
	json_object_object_add(args, key, json_object_new_string(value));
	return tdaemon_call(t, h_policy, args, data, err, errlen);
}

__attribute__((unused)) static const char *
json_str(struct json_object *o, const char *key)
{
	struct json_object *j;

	assert_true(json_object_object_get_ex(o, key, &j));
	return json_object_get_string(j);
}

#endif
