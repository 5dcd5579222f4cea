"""The static scorecard site and the per-sample viewer (docs/site.md).

`build.build_site` writes `site/` from the pipeline's files (the `site` DVC stage); `leaderboard_page` renders a
benchmark × release page (also used for `metrics/<b>/<R>/leaderboard.html`); `samples` is the per-sample viewer
(`reportbench view`). Everything is plain HTML with inline CSS/JS/SVG: no CDN, opens offline from file://.
"""
