/*
 * vnumad - the NUMA balancer daemon.  Options are in docs/vnumad.8; the configuration in
 * docs/vnumad.conf.5.  Start-up is the only place that may exit on an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/config.h"
#include "agent/daemon.h"
#include "agent/log.h"
#include "agent/policy_files.h"
#include "agent/state.h"
#include "agent/version.h"
#include "host/fault.h"
#include "host/sim/sim.h"

/* Longest --socket path, bytes: what the config's socket_path (a sun_path) holds. */
#define VNUMAD_SOCKET_PATH_MAX (sizeof(((struct config *)NULL)->socket_path) - 1)
/*
 * A simulated daemon's default directory, under $XDG_RUNTIME_DIR (or VNUMAD_SIM_BASE_DIR when
 * that is unset or not absolute), named with our uid: it never shares the real daemon's socket
 * or state file, nor another user's.  Created with VNUMAD_SIM_DIR_MODE.
 */
#define VNUMAD_SIM_BASE_DIR "/tmp"
#define VNUMAD_SIM_DIR_MODE 0700
#define VNUMAD_SIM_SOCKET   "vnumad.sock"
#define VNUMAD_SIM_STATE    "state.json"

struct vnumad_opts {
	const char *check; /* -n: config file to check, "" = the default one */
	bool check_only;
	const char *config;   /* -f/--config */
	const char *simulate; /* --simulate [SCENARIO] */
	bool have_simulate;
	const char *host;    /* --host linux */
	const char *connect; /* --connect URI (libvirt) */
	double speed;
	const char *host_profile; /* --host-profile NAME (with --simulate) */
	const char *fault_inject; /* --fault-inject SPEC (with --simulate) */
	const char *socket;
	bool foreground, restore;
	const char *state_file;       /* --state FILE (tests and side-by-side runs) */
	const char *metrics_textfile; /* --metrics-textfile PATH */
};

/* The daemon the signal handlers talk to (signal handlers can reach nothing else). */
static struct daemon *vnumad_sig_daemon;

static void
vnumad_on_signal(int sig)
{
	if (vnumad_sig_daemon == NULL)
		return;
	if (sig == SIGHUP)
		vnumad_sig_daemon->reload = 1;
	else
		vnumad_sig_daemon->stop = 1;
}

static void
vnumad_signals(struct daemon *d)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	vnumad_sig_daemon = d;
	sa.sa_handler = vnumad_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

static void
vnumad_usage(FILE *f)
{
	fprintf(f, "usage: vnumad [-n [FILE]] [-f FILE] [--simulate [SCENARIO|default]] "
	           "[--speed N]\n"
	           "              [--host-profile linux|libvirt|ideal] [--fault-inject SPEC]\n"
	           "              [--socket PATH] [--state FILE] [--metrics-textfile PATH]\n"
	           "              [--foreground] [--restore]\n"
	           "              [--host linux] [--connect URI] [-V] [-h]\n");
}

static const char *
vnumad_optval(int argc, char **argv, int *i, const char *opt)
{
	const char *eq = strchr(argv[*i], '=');

	if (eq != NULL)
		return eq + 1;
	if (*i + 1 >= argc)
		fatalx("%s: missing value", opt);
	return argv[++*i];
}

/* The word after an option that takes an optional value, unless it is an option itself. */
static const char *
vnumad_optional(int argc, char **argv, int *i)
{
	const char *eq = strchr(argv[*i], '=');

	if (eq != NULL)
		return eq + 1;
	if (*i + 1 < argc && argv[*i + 1][0] != '-')
		return argv[++*i];
	return NULL;
}

static bool
vnumad_is(const char *arg, const char *opt)
{
	size_t n = strlen(opt);

	return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static void
vnumad_parse(int argc, char **argv, struct vnumad_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-n") == 0) {
			o->check_only = true;
			o->check = vnumad_optional(argc, argv, &i);
		} else if (strcmp(a, "-f") == 0 || vnumad_is(a, "--config")) {
			o->config = vnumad_optval(argc, argv, &i, a);
		} else if (vnumad_is(a, "--simulate")) {
			o->have_simulate = true;
			o->simulate = vnumad_optional(argc, argv, &i);
		} else if (vnumad_is(a, "--speed")) {
			char *end;

			o->speed = strtod(vnumad_optval(argc, argv, &i, a), &end);
			if (*end != '\0' || !(o->speed > 0 && o->speed <= 1000))
				fatalx("--speed: a number of simulated seconds per second, 0-1000");
		} else if (vnumad_is(a, "--fault-inject")) {
			o->fault_inject = vnumad_optval(argc, argv, &i, a);
		} else if (vnumad_is(a, "--host-profile")) {
			o->host_profile = vnumad_optval(argc, argv, &i, a);
		} else if (vnumad_is(a, "--socket")) {
			o->socket = vnumad_optval(argc, argv, &i, a);
			if (strlen(o->socket) > VNUMAD_SOCKET_PATH_MAX)
				fatalx(
				    "--socket: the path is %zu bytes, longer than the %zu a Unix "
				    "socket address holds: %s",
				    strlen(o->socket), VNUMAD_SOCKET_PATH_MAX, o->socket);
		} else if (vnumad_is(a, "--state")) {
			o->state_file = vnumad_optval(argc, argv, &i, a);
		} else if (vnumad_is(a, "--metrics-textfile")) {
			o->metrics_textfile = vnumad_optval(argc, argv, &i, a);
			if (o->metrics_textfile[0] != '/' ||
			    strlen(o->metrics_textfile) >=
			        sizeof(((struct daemon *)NULL)->metrics_textfile_opt))
				fatalx("--metrics-textfile: an absolute path of a file, at most "
				       "%zu bytes",
				       sizeof(((struct daemon *)NULL)->metrics_textfile_opt) - 1);
		} else if (strcmp(a, "--foreground") == 0 || strcmp(a, "-d") == 0) {
			o->foreground = true;
		} else if (strcmp(a, "--restore") == 0) {
			o->restore = true;
		} else if (vnumad_is(a, "--host")) {
			o->host = vnumad_optval(argc, argv, &i, a);
			if (strcmp(o->host, "linux") != 0)
				fatalx("--host %s: unknown host backend (there is linux; the "
				       "simulated host is --simulate)",
				       o->host);
		} else if (vnumad_is(a, "--connect")) {
			o->connect = vnumad_optval(argc, argv, &i, a);
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			printf("vnumad %s\n", vnumad_version());
			exit(0);
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			vnumad_usage(stdout);
			exit(0);
		} else {
			vnumad_usage(stderr);
			fatalx("unknown option '%s'", a);
		}
	}
}

/* -n: check a configuration file, and what it names on this host (control_group), and exit. */
static int
vnumad_check(const char *path)
{
	struct config cfg;
	char err[8192];

	struct policy_files pf = {0};
	size_t bad;

	if (config_load(path, &cfg, err, sizeof(err)) < 0 ||
	    daemon_config_check(&cfg, err, sizeof(err)) < 0 ||
	    policy_files_load(cfg.policy_dir, &pf, err, sizeof(err)) < 0) {
		fputs(err, stderr);
		if (err[0] && err[strlen(err) - 1] != '\n')
			fputc('\n', stderr);
		return 1;
	}
	bad = policy_files_errors(&pf, cfg.policy_dir, err, sizeof(err));
	policy_files_free(&pf);
	if (bad > 0) {
		fputs(err, stderr);
		fprintf(stderr,
		        "%s: configuration OK, but %zu policy file%s in %s refused (the VMs "
		        "they name would run on the default policy)\n",
		        path, bad, bad == 1 ? "" : "s", cfg.policy_dir);
		return 1;
	}
	printf("%s: configuration OK (policy files in %s OK)\n", path, cfg.policy_dir);
	return 0;
}

/*
 * The simulated daemon's own directory (see VNUMAD_SIM_BASE_DIR) into dir: created when
 * missing, and refused unless it is a real directory of ours that no one else may enter.
 */
static void
vnumad_sim_dir(char *dir, size_t len)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (base == NULL || base[0] != '/')
		base = VNUMAD_SIM_BASE_DIR;
	if (snprintf(dir, len, "%s/vnumad-sim-%u", base, (unsigned)geteuid()) >= (int)len)
		fatalx("--simulate: the directory under %s is too long a path; give --socket and "
		       "--state",
		       base);
	if (mkdir(dir, VNUMAD_SIM_DIR_MODE) < 0 && errno != EEXIST)
		fatal("--simulate: cannot create %s", dir);
	if (lstat(dir, &st) < 0)
		fatal("--simulate: %s", dir);
	if (!S_ISDIR(st.st_mode))
		fatalx("--simulate: %s is %s, not a directory; remove it or give --socket and "
		       "--state",
		       dir, S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
	if (st.st_uid != geteuid())
		fatalx("--simulate: %s belongs to uid %u, not to us (uid %u); give --socket and "
		       "--state",
		       dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 077) != 0)
		fatalx("--simulate: %s has mode %04o, open to others (want %04o); chmod it or give "
		       "--socket and --state",
		       dir, (unsigned)(st.st_mode & 07777), VNUMAD_SIM_DIR_MODE);
}

/* A simulated run's socket or state file: in dir, whatever the configuration file names. */
static void
vnumad_sim_path(char *path, size_t len, const char *dir, const char *name, const char *key,
                const char *def, const char *opt)
{
	if (strcmp(path, def) != 0)
		log_info(
		    "not using %s = %s of the configuration: a simulated daemon keeps the real "
		    "one's files untouched (%s chooses one)",
		    key, path, opt);
	if (snprintf(path, len, "%s/%s", dir, name) >= (int)len)
		fatalx("--simulate: %s/%s is too long for a %s; give %s", dir, name, key, opt);
}

/*
 * --simulate: the socket and state file not given on the command line live in the simulated
 * daemon's directory, never where the configuration (or the built-in default) puts the real
 * daemon's.
 */
static void
vnumad_sim_paths(struct daemon *d, const struct vnumad_opts *o)
{
	struct config def;
	char dir[PATH_MAX];

	if (o->socket != NULL && o->state_file != NULL)
		return;
	config_defaults(&def);
	vnumad_sim_dir(dir, sizeof(dir));
	if (o->socket == NULL)
		vnumad_sim_path(d->cfg.socket_path, sizeof(d->cfg.socket_path), dir,
		                VNUMAD_SIM_SOCKET, "socket", def.socket_path, "--socket");
	if (o->state_file == NULL)
		vnumad_sim_path(d->cfg.state_file, sizeof(d->cfg.state_file), dir, VNUMAD_SIM_STATE,
		                "state_file", def.state_file, "--state");
}

static void
vnumad_config(struct daemon *d, const struct vnumad_opts *o)
{
	char err[8192];
	int rc;

	snprintf(d->config_path, sizeof(d->config_path), "%s",
	         o->config ? o->config : CONFIG_DEFAULT_PATH);
	d->config_given = o->config != NULL;
	rc = config_load(d->config_path, &d->cfg, err, sizeof(err));
	if (rc == -ENOENT && !d->config_given)
		config_defaults(&d->cfg);
	else if (rc < 0)
		fatalx("%s", err);
	d->cfg_file = d->cfg; /* what reload compares with: the file, not the overrides */
	if (o->have_simulate)
		vnumad_sim_paths(d, o);
	if (o->socket != NULL)
		snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path), "%s", o->socket);
	if (o->state_file != NULL)
		snprintf(d->cfg.state_file, sizeof(d->cfg.state_file), "%s", o->state_file);
	if (o->metrics_textfile != NULL) /* applied by metrics_export_overrides, reloads too */
		snprintf(d->metrics_textfile_opt, sizeof(d->metrics_textfile_opt), "%s",
		         o->metrics_textfile);
	if (o->have_simulate && (o->host != NULL || o->connect != NULL))
		fatalx("--simulate and --%s: choose one host", o->host ? "host" : "connect");
	if (o->connect != NULL && snprintf(d->connect_uri, sizeof(d->connect_uri), "%s",
	                                   o->connect) >= (int)sizeof(d->connect_uri))
		fatalx("--connect: the URI is longer than %zu bytes", sizeof(d->connect_uri) - 1);
	if (!o->have_simulate && o->speed > 0)
		fatalx("--speed: only with --simulate (a real host runs in real time)");
	if (o->host_profile != NULL && !o->have_simulate)
		fatalx("--host-profile: only with --simulate (a real host has the levers it has)");
	if (o->host_profile != NULL &&
	    sim_profile_parse(o->host_profile, &d->host_profile, err, sizeof(err)) < 0)
		fatalx("--host-profile: %s", err);
	if (o->fault_inject != NULL) {
		double rate;
		uint64_t seed;

		if (!o->have_simulate)
			fatalx("--fault-inject: only with --simulate (a test of the daemon)");
		if (host_fault_spec_parse(o->fault_inject, &rate, &seed, err, sizeof(err)) < 0 ||
		    snprintf(d->fault_spec, sizeof(d->fault_spec), "%s", o->fault_inject) >=
		        (int)sizeof(d->fault_spec))
			fatalx("--fault-inject: %s", err[0] ? err : "too long");
	}
	/* No backend named: this machine (--host linux). */
	d->simulate = o->have_simulate;
	snprintf(d->scenario, sizeof(d->scenario), "%s", o->simulate ? o->simulate : "default");
	d->speed = o->speed > 0 ? o->speed : 1.0;
}

static void
vnumad_daemonize(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		fatal("fork");
	if (pid > 0)
		_exit(0);
	setsid();
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
}

/* --restore: put back every recorded affinity and exit; 1 when some could not be. */
static int
vnumad_restore_only(struct daemon *d)
{
	char err[1024];
	size_t kept;
	int n;

	events_init(&d->events);
	if (state_lock(d->cfg.state_file, &d->lock_fd, err, sizeof(err)) < 0 ||
	    daemon_host_open(d, err, sizeof(err)) < 0)
		fatalx("%s", err);
	daemon_state_load(d);
	/* Let the host come up (the simulator starts its VMs on its first tick). */
	d->host->ops->advance(d->host, d->host->ops->now(d->host) + 1.0);
	d->host->ops->commit(d->host);
	n = daemon_restore(d);
	printf("restored %d vCPUs\n", n < 0 ? 0 : n);
	if (d->state->scan_saved) {
		int rc = scan_lever_restore(d);

		printf("%s the kernel's scan tunables%s\n",
		       rc < 0 ? "could not restore" : "restored",
		       rc < 0 ? ": kept in the state file" : "");
		n = rc < 0 ? -1 : n;
	}
	kept = n < 0 ? 0 : d->state->nr;
	if (kept > 0)
		printf("%zu vCPUs could not be restored: kept in %s\n", kept, d->cfg.state_file);
	d->cfg.restore_on_exit = false;
	daemon_fini(d);
	return n < 0 || kept > 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct vnumad_opts o = {0};
	struct daemon d;
	char err[8192];
	int rc;

	memset(&d, 0, sizeof(d));
	d.lock_fd = -1;
	/* Replies print doubles with 10 significant digits, not json-c's 17 (0.69999999999999996).
	 */
	json_c_set_serialization_double_format("%.10g", JSON_C_OPTION_GLOBAL);
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	vnumad_parse(argc, argv, &o);
	if (o.check_only)
		return vnumad_check(o.check ? o.check : CONFIG_DEFAULT_PATH);
	vnumad_config(&d, &o);
	log_init("vnumad", d.cfg.log_level, d.cfg.log_target);
	if (o.restore)
		return vnumad_restore_only(&d);
	if (!o.foreground)
		vnumad_daemonize();
	vnumad_signals(&d);
	rc = daemon_init(&d, err, sizeof(err));
	if (rc < 0) {
		daemon_fini(&d);
		fatalx("%s", err);
	}
	if (d.simulate)
		log_info("simulated host: control socket %s; for vnumactl: export VNUMAD_SOCKET=%s",
		         d.cfg.socket_path, d.cfg.socket_path);
	daemon_run(&d);
	log_info("stopping");
	daemon_fini(&d);
	return 0;
}
