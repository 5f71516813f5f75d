// A move or resubmit job's page: its progress, pushed over /ws/jobs/<id>/.
import { follow } from "./live.js";

const root = document.getElementById("job");
const progress = document.getElementById("job-progress");
const problems = document.querySelector("#job-problems tbody");
const template = document.getElementById("problem-template");
const resume = document.getElementById("resume-form");

function show(job) {
  root.dataset.state = job.state;
  progress.max = job.total;
  progress.value = job.position;
  progress.textContent = `${job.position} of ${job.total}`;
  for (const el of root.querySelectorAll("[data-f]")) {
    const value = job[el.dataset.f];
    el.textContent = value === null || value === undefined ? "—" : String(value);
  }
  if (resume) resume.hidden = job.state !== "failed";
  if (job.problems.length) {
    problems.replaceChildren(...job.problems.map((p) => {
      const tr = template.content.firstElementChild.cloneNode(true);
      for (const td of tr.querySelectorAll("[data-c]")) td.textContent = p[td.dataset.c];
      return tr;
    }));
  }
}

follow(root.dataset.socket, { onMessage: (msg) => { if (msg.type === "job") show(msg.job); } });
