/*
 * metrics_export.c - the metrics' listener and textfile, kept in line with the configuration,
 * and the once-a-round render (metrics_export.h).
 */
#include "agent/metrics_export.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/metrics.h"
#include "agent/metrics_http.h"

/* Wall seconds between two warnings that the textfile still cannot be written. */
#define METRICS_TEXTFILE_SAY_S 60.0

struct metrics_export {
	struct metrics_http *http;
	char listen[METRICS_ADDR_MAX]; /* the configured address, canonical; "" = off */
	char textfile[PATH_MAX];       /* "" = off */
	int textfile_rc;               /* the last write's result (0 or -errno) */
	double textfile_said_wall;     /* when its failure was last logged */
	uint64_t scrapes_before;       /* answered by listeners stopped since */
	double render_s;               /* the previous round's render time, < 0: none yet */
	struct util_buf text;          /* the last text rendered */
};

void
metrics_export_overrides(const struct daemon *d, struct config *cfg)
{
	if (d->simulate && !d->config_given) {
		cfg->metrics_listen[0] = '\0';
		cfg->metrics_textfile[0] = '\0';
	}
	if (d->metrics_textfile_opt[0] != '\0')
		snprintf(cfg->metrics_textfile, sizeof(cfg->metrics_textfile), "%s",
		         d->metrics_textfile_opt);
}

static void
metrics_export_stop(struct metrics_export *mx)
{
	if (mx->http == NULL)
		return;
	mx->scrapes_before += metrics_http_scrapes(mx->http);
	metrics_http_stop(mx->http);
	mx->http = NULL;
}

/*
 * Serve on addr instead of the running listener, if any; that one stops once the new one
 * listens, or first when they want the same port (EADDRINUSE), and is started again when the
 * new one fails.
 */
static int
metrics_export_move(struct metrics_export *mx, const struct metrics_addr *addr, char *err,
                    size_t errlen)
{
	struct metrics_http *h = NULL;
	struct metrics_addr old;
	char msg[256];
	int rc = metrics_http_start(addr, &h, err, errlen);

	if (rc == -EADDRINUSE && mx->http != NULL) {
		metrics_export_stop(mx);
		rc = metrics_http_start(addr, &h, err, errlen);
		if (rc < 0 && metrics_addr_parse(mx->listen, &old, msg, sizeof(msg)) == 0 &&
		    metrics_http_start(&old, &mx->http, msg, sizeof(msg)) < 0)
			log_warnx("%s; the old listener could not be started again: %s", err, msg);
	}
	if (rc < 0)
		return rc;
	metrics_export_stop(mx);
	mx->http = h;
	snprintf(mx->listen, sizeof(mx->listen), "%s", addr->text);
	if (mx->text.len > 0) /* what the last round rendered, until the next one */
		metrics_http_publish(h, mx->text.data, mx->text.len);
	log_info("metrics: serving /metrics on http://%s/metrics", metrics_http_address(h));
	return 0;
}

int
metrics_export_configure(struct daemon *d, const struct config *cfg, char *err, size_t errlen)
{
	struct metrics_export *mx = d->metrics;
	struct metrics_addr addr;
	int rc;

	if (mx == NULL) {
		mx = d->metrics = xcalloc(1, sizeof(*mx));
		mx->render_s = -1;
	}
	if (cfg->metrics_listen[0] == '\0') {
		if (mx->http != NULL)
			log_info("metrics: no longer serving /metrics on %s",
			         metrics_http_address(mx->http));
		metrics_export_stop(mx);
		mx->listen[0] = '\0';
	} else {
		/* checked by the config's parser: it parses */
		rc = metrics_addr_parse(cfg->metrics_listen, &addr, err, errlen);
		if (rc < 0)
			return rc;
		if (strcmp(addr.text, mx->listen) != 0 || mx->http == NULL) {
			rc = metrics_export_move(mx, &addr, err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	if (strcmp(mx->textfile, cfg->metrics_textfile) != 0) {
		snprintf(mx->textfile, sizeof(mx->textfile), "%s", cfg->metrics_textfile);
		mx->textfile_rc = 0;
		if (mx->textfile[0] != '\0')
			log_info("metrics: writing %s every round", mx->textfile);
	}
	return 0;
}

/* Write text to path through path.tmp in the same directory and a rename: readers see the
 * old file or the new one, whole.  0 or -errno, with what failed in *what. */
static int
metrics_textfile_write(const char *path, const char *text, size_t len, const char **what)
{
	char tmp[PATH_MAX + 8];
	size_t off = 0;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	*what = "cannot create";
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	*what = "cannot write";
	while (off < len && rc == 0) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno != EINTR)
			rc = -errno;
		off += n > 0 ? (size_t)n : 0;
	}
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	*what = "cannot rename over";
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

static void
metrics_export_textfile(struct metrics_export *mx)
{
	const char *what = "";
	double now = daemon_wall_s();
	int rc = metrics_textfile_write(mx->textfile, mx->text.data, mx->text.len, &what);

	if (rc < 0 &&
	    (rc != mx->textfile_rc || now - mx->textfile_said_wall >= METRICS_TEXTFILE_SAY_S)) {
		log_warnx("metrics_textfile %s: %s it (through %s.tmp): %s; vnumad goes on and "
		          "tries again every round (the directory must exist and be writable)",
		          mx->textfile, what, mx->textfile, strerror(-rc));
		mx->textfile_said_wall = now;
	} else if (rc == 0 && mx->textfile_rc < 0) {
		log_info("metrics_textfile %s: written again", mx->textfile);
	}
	mx->textfile_rc = rc;
}

void
metrics_export_round(struct daemon *d)
{
	struct metrics_export *mx = d->metrics;
	struct metrics_view mv;
	double t0;

	if (mx == NULL || (mx->http == NULL && mx->textfile[0] == '\0'))
		return;
	t0 = daemon_wall_s();
	metrics_view_collect(d, &mv);
	mv.render_s = mx->render_s;
	mv.scrapes = mx->scrapes_before + (mx->http ? metrics_http_scrapes(mx->http) : 0);
	mx->text.len = 0;
	metrics_render(&mv, &mx->text);
	metrics_view_free(&mv);
	mx->render_s = daemon_wall_s() - t0;
	if (mx->http != NULL)
		metrics_http_publish(mx->http, mx->text.data, mx->text.len);
	if (mx->textfile[0] != '\0')
		metrics_export_textfile(mx);
}

const char *
metrics_export_address(const struct daemon *d)
{
	return d->metrics != NULL && d->metrics->http != NULL
	           ? metrics_http_address(d->metrics->http)
	           : "";
}

void
metrics_export_close(struct daemon *d)
{
	if (d->metrics == NULL)
		return;
	metrics_export_stop(d->metrics);
	free(d->metrics->text.data);
	free(d->metrics);
	d->metrics = NULL;
}
