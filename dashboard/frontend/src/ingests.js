// Live progress of the Spark ingests listed on a queue's page: each unfinished row follows
// GET /api/ingests/{id}/ (the session signs the request in) until its ingest ends.
const FINISHED = new Set(["succeeded", "failed"]);

function show(row, ingest) {
  row.dataset.state = ingest.state;
  for (const name of ["state", "records_done", "messages_put", "duplicates_skipped", "error"]) {
    const cell = row.querySelector(`[data-field="${name}"]`);
    if (cell) cell.textContent = ingest[name] ?? "";
  }
  row.querySelector('[data-field="records_total"]').textContent = ingest.records_total ?? "?";
  const bar = row.querySelector('[data-field="progress"]');
  bar.max = ingest.records_total || 1;
  bar.value = ingest.records_done;
}

async function follow(row) {
  while (!FINISHED.has(row.dataset.state)) {
    try {
      const response = await fetch(`/api/ingests/${encodeURIComponent(row.dataset.ingestId)}/`,
        { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (response.ok) show(row, await response.json());
    } catch (error) {
      // the server is restarting: try again at the next tick
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

document.querySelectorAll("#ingest-table tr[data-ingest-id]").forEach(follow);
