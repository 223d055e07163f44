// The server processes a benchmark script starts, ended however the run
// ends: by stopAll() at its end, or killed on SIGINT, SIGTERM or an uncaught
// exception (after `cleanup`, e.g. removing the script's scratch folder).

import { spawn } from "node:child_process";

const children = new Set();
let cleanup = () => {};

/// Registers the handlers once; `name` prefixes an uncaught exception's report.
export function endChildrenOnExit(name, onExit = () => {}) {
  cleanup = onExit;
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      killAll();
      cleanup();
      process.exit(1);
    });
  }
  process.on("uncaughtException", (error) => {
    killAll();
    cleanup();
    console.error(`${name}: ${error.stack ?? error}`);
    process.exit(1);
  });
}

/// Spawns a server. A child with `closeStdin` is asked to stop by the end of
/// its input, the others by SIGTERM; with `keepStderr` its stderr is kept in
/// `entry.stderr`.
export function startChild(command, args, stdio, { closeStdin = false, keepStderr = false } = {}) {
  const child = spawn(command, args, { stdio });
  const exited = new Promise((done) => child.on("exit", (code, signal) => done(code ?? signal)));
  const entry = { child, exited, closeStdin, stderr: "" };
  if (keepStderr) child.stderr.on("data", (chunk) => (entry.stderr += chunk));
  children.add(entry);
  child.on("error", () => {});
  return entry;
}

export function running(entry) {
  return entry.child.exitCode === null && entry.child.signalCode === null;
}

/// Asks the child to stop, and kills it after 5 s.
export async function stopChild(entry) {
  if (!children.has(entry)) return;
  children.delete(entry);
  if (running(entry)) {
    if (entry.closeStdin) entry.child.stdin.end();
    else entry.child.kill("SIGTERM");
    const late = setTimeout(() => entry.child.kill("SIGKILL"), 5000);
    await entry.exited;
    clearTimeout(late);
  }
}

export async function stopAll() {
  await Promise.all([...children].map((entry) => stopChild(entry)));
}

export function killAll() {
  for (const { child } of children) child.kill("SIGKILL");
}
