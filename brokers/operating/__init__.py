"""Operating the platform (docs/operating.md, docs/monitoring.md): metrics, retention, backup, queue
events. Reads in ``selectors``; work in the other modules, each one purpose."""
