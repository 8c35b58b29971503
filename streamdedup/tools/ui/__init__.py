"""``streamdedup ui``: a local web inspector over the same reader as ``streamdedup inspect``.

- :mod:`.views`: pure helpers (cursors in links, filters from a query, figures as text);
- :mod:`.whatif`: the what-if form's replay (``streamdedup.tools.whatif`` on recent input);
- :mod:`.app`: the Starlette application, server-rendered Jinja2 templates (autoescaped:
  record texts are untrusted input) and a little plain JavaScript, no build step.
"""
