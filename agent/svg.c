/*
 * svg.c - locality-over-time line chart, written by hand (no plotting library).
 *
 * Layout: a plot area with a light grid, time (s) on x with "nice" ticks (1, 2 or 5 times a
 * power of ten), locality 0..1 on y in steps of 0.2, the legend to the right of the plot.
 * Coordinates are printed with one decimal, so the bytes depend only on the input.
 */
#include "agent/svg.h"

#include <math.h>
#include <string.h>

#include "agent/format.h"

#define SVG_WIDTH        800  /* px, whole image */
#define SVG_HEIGHT       450  /* px */
#define SVG_MARGIN_LEFT  64   /* px, room for the y tick labels and axis label */
#define SVG_MARGIN_RIGHT 140  /* px, room for the legend */
#define SVG_MARGIN_TOP   44   /* px, room for the title */
#define SVG_MARGIN_BOT   56   /* px, room for the x tick labels and axis label */
#define SVG_X_TICKS      8    /* about this many x ticks */
#define SVG_Y_TICKS      5    /* locality ticks: 0, 0.2, ..., 1 */
#define SVG_MAX_POINTS   1200 /* per line; longer series are averaged in buckets (~1 per px) */
#define SVG_LEGEND_ROW   20   /* px between legend entries */

/* The plot area in image coordinates, and the time range it shows. */
struct svg_frame {
	double x0, x1, y0, y1; /* y0 is the top */
	double t_max_s;
};

/* Fixed colours for the balancers we know, so every chart uses the same ones. */
static const struct {
	const char *policy;
	const char *colour;
	const char *dash; /* stroke-dasharray, or NULL */
} svg_styles[] = {
    {"none", "#7f7f7f", NULL},   {"autonuma", "#ff7f0e", NULL}, {"numad", "#2ca02c", NULL},
    {"static", "#9467bd", NULL}, {"vnumad", "#1f77b4", NULL},   {"oracle", "#000000", "6 4"},
};
static const char *const svg_spare_colours[] = {"#d62728", "#8c564b", "#e377c2", "#17becf",
                                                "#bcbd22"};

#define SVG_NR_STYLES ((int)(sizeof(svg_styles) / sizeof(svg_styles[0])))
#define SVG_NR_SPARE  ((int)(sizeof(svg_spare_colours) / sizeof(svg_spare_colours[0])))

static void
svg_style_of(const char *policy, int idx, const char **colour, const char **dash)
{
	for (int i = 0; i < SVG_NR_STYLES; i++) {
		if (strcmp(svg_styles[i].policy, policy) == 0) {
			*colour = svg_styles[i].colour;
			*dash = svg_styles[i].dash;
			return;
		}
	}
	*colour = svg_spare_colours[idx % SVG_NR_SPARE];
	*dash = NULL;
}

static void
svg_text_escaped(struct util_buf *buf, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '&':
			util_buf_printf(buf, "&amp;");
			break;
		case '<':
			util_buf_printf(buf, "&lt;");
			break;
		case '>':
			util_buf_printf(buf, "&gt;");
			break;
		case '"':
			util_buf_printf(buf, "&quot;");
			break;
		case '\'':
			util_buf_printf(buf, "&apos;");
			break;
		default:
			util_buf_printf(buf, "%c", *s);
		}
	}
}

static double
svg_x(const struct svg_frame *fr, double t_s)
{
	return fr->x0 + (fr->x1 - fr->x0) * t_s / fr->t_max_s;
}

static double
svg_y(const struct svg_frame *fr, double locality)
{
	locality = fmin(fmax(locality, 0.0), 1.0);
	return fr->y1 - (fr->y1 - fr->y0) * locality;
}

/* 1, 2 or 5 times a power of ten, giving about SVG_X_TICKS ticks over range. */
static double
svg_tick_step(double range)
{
	double raw = range / SVG_X_TICKS;
	double mag = pow(10.0, floor(log10(raw)));
	double norm = raw / mag;

	if (norm <= 1.0)
		return mag;
	if (norm <= 2.0)
		return 2.0 * mag;
	if (norm <= 5.0)
		return 5.0 * mag;
	return 10.0 * mag;
}

static void
svg_axes(struct util_buf *buf, const struct svg_frame *fr)
{
	double step = svg_tick_step(fr->t_max_s);

	util_buf_printf(buf, "<g stroke=\"#dddddd\" stroke-width=\"1\">\n");
	for (int k = 0; k <= SVG_Y_TICKS; k++) {
		double y = svg_y(fr, (double)k / SVG_Y_TICKS);

		util_buf_printf(buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		                fr->x0, y, fr->x1, y);
	}
	util_buf_printf(buf, "</g>\n<g font-size=\"12\" fill=\"#333333\">\n");
	for (int k = 0; k <= SVG_Y_TICKS; k++)
		util_buf_printf(
		    buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n",
		    fr->x0 - 6, svg_y(fr, (double)k / SVG_Y_TICKS) + 4, (double)k / SVG_Y_TICKS);
	for (int k = 0; k * step <= fr->t_max_s * (1 + 1e-9); k++) {
		double x = svg_x(fr, k * step);

		util_buf_printf(buf,
		                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		                "stroke=\"#333333\"/>\n",
		                x, fr->y1, x, fr->y1 + 5);
		util_buf_printf(buf,
		                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x,
		                fr->y1 + 19, k * step);
	}
	util_buf_printf(buf,
	                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n"
	                "<text transform=\"translate(16 %.1f) rotate(-90)\" "
	                "text-anchor=\"middle\">locality</text>\n</g>\n",
	                (fr->x0 + fr->x1) / 2, SVG_HEIGHT - 12, (fr->y0 + fr->y1) / 2);
	util_buf_printf(buf,
	                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
	                "stroke=\"#333333\"/>\n",
	                fr->x0, fr->y0, fr->x1 - fr->x0, fr->y1 - fr->y0);
}

/*
 * The path data of one series: a subpath per run of samples that have data.  Each subpath
 * starts with "h0" so that a lone point still shows as a dot (round line caps).
 */
static void
svg_series_data(struct util_buf *buf, const struct svg_frame *fr, const struct sim_result *res)
{
	int nr = res->locality_series != NULL ? res->nr_samples : 0;
	int bucket = nr > SVG_MAX_POINTS ? (nr + SVG_MAX_POINTS - 1) / SVG_MAX_POINTS : 1;
	bool pen_down = false, first = true;

	for (int i = 0; i < nr; i += bucket) {
		int end = i + bucket < nr ? i + bucket : nr, n = 0;
		double sum = 0.0;

		for (int j = i; j < end; j++) {
			if (res->locality_series[j] >= 0.0) {
				sum += res->locality_series[j];
				n++;
			}
		}
		if (n == 0) {
			pen_down = false;
			continue;
		}
		util_buf_printf(buf, "%s%.1f %.1f%s",
		                pen_down ? " L"
		                : first  ? "M"
		                         : " M",
		                svg_x(fr, end * SIM_SAMPLE_PERIOD_S), svg_y(fr, sum / n),
		                pen_down ? "" : " h0");
		pen_down = true;
		first = false;
	}
}

static void
svg_series(struct util_buf *buf, const struct svg_frame *fr, const struct sim_result *res, int idx)
{
	const char *colour, *dash;
	double y = fr->y0 + 10 + idx * SVG_LEGEND_ROW;

	svg_style_of(res->policy, idx, &colour, &dash);
	util_buf_printf(buf, "<path data-policy=\"");
	svg_text_escaped(buf, res->policy);
	util_buf_printf(buf, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" ", colour);
	if (dash != NULL)
		util_buf_printf(buf, "stroke-dasharray=\"%s\" ", dash);
	util_buf_printf(buf, "stroke-linecap=\"round\" stroke-linejoin=\"round\" d=\"");
	svg_series_data(buf, fr, res);
	util_buf_printf(buf, "\"/>\n");
	/* Legend entry. */
	util_buf_printf(buf,
	                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
	                "stroke-width=\"2\"%s%s%s/>\n",
	                fr->x1 + 16, y, fr->x1 + 40, y, colour,
	                dash != NULL ? " stroke-dasharray=\"" : "", dash != NULL ? dash : "",
	                dash != NULL ? "\"" : "");
	util_buf_printf(buf, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", fr->x1 + 46, y + 4);
	svg_text_escaped(buf, res->policy);
	util_buf_printf(buf, "</text>\n");
}

char *
svg_locality_chart(const char *title, double duration_s, const struct sim_result *results,
                   int nr_results)
{
	struct util_buf buf = {0};
	struct svg_frame fr = {
	    .x0 = SVG_MARGIN_LEFT,
	    .x1 = SVG_WIDTH - SVG_MARGIN_RIGHT,
	    .y0 = SVG_MARGIN_TOP,
	    .y1 = SVG_HEIGHT - SVG_MARGIN_BOT,
	    .t_max_s = duration_s,
	};

	for (int i = 0; i < nr_results; i++)
		fr.t_max_s = fmax(fr.t_max_s, results[i].nr_samples * SIM_SAMPLE_PERIOD_S);
	if (!(fr.t_max_s > 0.0))
		fr.t_max_s = 1.0; /* nothing to show; keep the axes sane */
	util_buf_printf(&buf,
	                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	                "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
	                SVG_WIDTH, SVG_HEIGHT, SVG_WIDTH, SVG_HEIGHT);
	util_buf_printf(&buf, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
	util_buf_printf(&buf, "<text x=\"%.1f\" y=\"26\" font-size=\"16\" text-anchor=\"middle\">",
	                (fr.x0 + fr.x1) / 2);
	svg_text_escaped(&buf, title);
	util_buf_printf(&buf, "</text>\n");
	svg_axes(&buf, &fr);
	for (int i = 0; i < nr_results; i++)
		svg_series(&buf, &fr, &results[i], i);
	util_buf_printf(&buf, "</svg>\n");
	return buf.data;
}
