// shiftgit plugin for OpenCode, version 2 (written by `shiftgit init --agent opencode`; rerun it to update).
// Each call runs `shiftgit hook opencode EVENT` (this clone's launcher) with a JSON payload on stdin, reads its answer;
// shiftgit's hooks fail open, and so does this plugin: any error leaves OpenCode as it was.
import { spawn } from "node:child_process";

const TIMEOUT_MS = 30000;
// this clone's hook launcher (written by `shiftgit init`, never committed), else `shiftgit` from PATH
const LAUNCH = "h=.git/shift/agent-hook; [ -x \"$h\" ] || h=$(git rev-parse --git-common-dir 2>/dev/null)/shift/agent-hook; [ -x \"$h\" ] && exec \"$h\" opencode \"$1\"; exec shiftgit hook opencode \"$1\"";

function hook(directory, event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn("sh", ["-c", LAUNCH, "sh", event], { cwd: directory, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      resolve({});
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.on("error", () => { clearTimeout(timer); resolve({}); });
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("close", () => {
      clearTimeout(timer);
      try { resolve(out.trim() ? JSON.parse(out) : {}); } catch { resolve({}); }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ cwd: directory, ...payload }));
  });
}

export const Shiftgit = async ({ client, directory }) => {
  const briefings = new Map();  // session id -> the briefing shiftgit gave at its first request
  const held = new Set();       // sessions continuing because shiftgit held their last turn
  return {
    "experimental.chat.system.transform": async (input, output) => {
      const id = input?.sessionID;
      if (!id) return;
      if (!briefings.has(id)) {
        const answer = await hook(directory, "session-start", { session_id: id, hook_event_name: "SessionStart" });
        briefings.set(id, answer?.hookSpecificOutput?.additionalContext || "");
      }
      const text = briefings.get(id);
      if (text) output.system.push(text);
    },
    "experimental.session.compacting": async (input) => {
      await hook(directory, "pre-compact", { session_id: input?.sessionID, hook_event_name: "PreCompact" });
    },
    event: async ({ event }) => {
      if (event?.type !== "session.idle") return;
      const id = event.properties?.sessionID;
      if (!id) return;
      const active = held.has(id);
      held.delete(id);
      const answer = await hook(directory, "session-idle",
                                { session_id: id, hook_event_name: "Stop", stop_hook_active: active });
      if (answer?.decision !== "block" || !answer.reason) return;
      held.add(id);
      await client.session.prompt({ path: { id }, body: { parts: [{ type: "text", text: answer.reason }] } });
    },
  };
};
