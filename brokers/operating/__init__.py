"""Operating the platform (API.md, "Operating Baton"): metrics, retention, backup, queue
events. Reads in ``selectors``; work in the other modules, each one purpose."""
