// The page of `nenjim serve`: browses the served Journal through its JSON routes and checks
// a revision's inclusion proof here, in the browser, against the served checkpoint.
// Routes (location.hash): #/ the artifacts; #/a/COORDINATE[/VERSION][?as-of=VERSION].
"use strict";

const PAGE_SIZE = 50;
const $ = (id) => document.getElementById(id);

// --- Fetching -------------------------------------------------------------------------

/** What the server would not answer (or the reader asked wrongly), said in one line. */
class Unanswered extends Error {
  constructor(message, status = null) {
    super(message);
    this.status = status;
  }
}

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    // The server's error names what it lacks; otherwise say what was asked.
    const said = body.error || `${path}: ${response.status} ${response.statusText}`;
    throw new Unanswered(said, response.status);
  }
  return body;
}

async function getText(path) {
  const response = await fetch(path);
  if (!response.ok) {
    throw new Unanswered(`${path}: ${response.status} ${response.statusText}`, response.status);
  }
  return response.text();
}

const enc = encodeURIComponent;

function showError(error) {
  $("error").hidden = false;
  $("error").textContent = error instanceof Error ? error.message : String(error);
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

// --- Small DOM helpers (text only: nothing served is ever parsed as HTML) ---------------

function el(tag, text, attributes = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function link(href, text) {
  return el("a", text, { href });
}

/** "20260101T000000Z" as "2026-01-01 00:00:00 UTC". */
function readable(version) {
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(version);
  return m ? `${m[1]}-${m[2]}-${m[3]} ${m[4]}:${m[5]}:${m[6]} UTC` : version;
}

/** A datetime-local value ("2026-01-01T00:00[:00]") as a Journal version, or null. */
function versionOfInput(value) {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?$/.exec(value);
  return m ? `${m[1]}${m[2]}${m[3]}T${m[4]}${m[5]}${m[6] || "00"}Z` : null;
}

function inputOfVersion(version) {
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(version);
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}` : "";
}

// --- The checkpoint ----------------------------------------------------------------------

/** A checkpoint note's origin, tree size and root hash (C2SP tlog-checkpoint). */
function parseCheckpoint(note) {
  const lines = note.split("\n");
  if (lines.length < 3 || !/^[1-9]\d*$|^0$/.test(lines[1])) {
    throw new ProofError("the checkpoint is not a checkpoint note");
  }
  return { origin: lines[0], size: Number(lines[1]), root: decodeHash(lines[2], "root") };
}

async function showCheckpoint() {
  const checkpoint = parseCheckpoint(await getText("/checkpoint"));
  $("checkpoint").textContent =
    `${checkpoint.origin}: ${checkpoint.size} revisions logged`;
}

// --- The artifacts, searched and paged -----------------------------------------------

const listing = { contains: null, next: null, count: 0 };

async function loadArtifacts(contains) {
  listing.contains = contains;
  listing.next = null;
  listing.count = 0;
  $("artifacts").replaceChildren();
  await loadMoreArtifacts();
}

async function loadMoreArtifacts() {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  if (listing.contains) query.set("contains", listing.contains);
  if (listing.next) query.set("cursor", listing.next);
  const page = await getJson(`/journal/coordinates?${query}`);
  const items = page.coordinates.map((coordinate) => {
    const item = el("li");
    item.append(link(`#/a/${enc(coordinate)}`, coordinate));
    return item;
  });
  $("artifacts").append(...items);
  listing.next = page.next;
  listing.count += page.coordinates.length;
  $("more").hidden = listing.next === null;
  const what = listing.contains ? ` containing \u201c${listing.contains}\u201d` : "";
  $("artifacts-status").textContent = listing.count === 0
    ? `No artifact${what}.`
    : `${listing.count} artifacts${what}${listing.next ? ", more to come" : ""}.`;
  return items;
}

// --- An artifact: its chain, as of a time -------------------------------------------------

const shown = { coordinate: null, revisions: [], asOf: null, selected: null };

async function allRevisions(coordinate) {
  const revisions = [];
  let cursor = null;
  do {
    const query = new URLSearchParams({ limit: "1000" });
    if (cursor) query.set("cursor", cursor);
    const page = await getJson(`/journal/${enc(coordinate)}/revisions?${query}`);
    revisions.push(...page.revisions);
    cursor = page.next;
  } while (cursor);
  return revisions;
}

function artifactHash(coordinate, version, asOf) {
  let hash = `#/a/${enc(coordinate)}`;
  if (version) hash += `/${enc(version)}`;
  if (asOf) hash += `?as-of=${enc(asOf)}`;
  return hash;
}

async function showArtifact(coordinate, version, asOf) {
  const fresh = shown.coordinate !== coordinate;
  if (fresh) {
    // Nothing of the artifact shown before stays, should this one not be found.
    shown.coordinate = null;
    $("artifact-title").textContent = coordinate;
    $("timeline").replaceChildren();
    $("as-of-status").textContent = "";
    $("revision-view").hidden = true;
    shown.revisions = await allRevisions(coordinate);
    shown.coordinate = coordinate;
  }
  shown.asOf = asOf;
  // The chain as it was: the revisions at or before the as-of time (the server says which).
  let upTo = shown.revisions.length;
  if (asOf) {
    let then = null;
    try {
      then = await getJson(`/journal/${enc(coordinate)}/as-of/${enc(asOf)}`);
    } catch (error) {
      if (!(error instanceof Unanswered && error.status === 404)) throw error;
    }
    upTo = then === null
      ? 0
      : shown.revisions.findIndex((r) => r.journal_version === then.journal_version) + 1;
    $("as-of-time").value = inputOfVersion(asOf);
    $("as-of-status").textContent = upTo === 0
      ? `As of ${readable(asOf)}: no revision yet.`
      : `As of ${readable(asOf)}: ${upTo} of ${shown.revisions.length} revisions, ` +
        `the newest ${then.journal_version}.`;
  } else {
    $("as-of-time").value = "";
    $("as-of-status").textContent = `Now: ${shown.revisions.length} revisions.`;
  }
  const visible = shown.revisions.slice(0, upTo);
  const selected = version || (visible.length ? visible[visible.length - 1].journal_version : null);
  $("as-of-earlier").disabled = upTo <= 1;
  $("as-of-later").disabled = asOf === null;
  $("as-of-now").disabled = asOf === null;
  renderTimeline(visible, selected);
  if (selected) {
    await showRevision(coordinate, selected);
  } else {
    $("revision-view").hidden = true;
  }
  if (fresh) $("artifact-title").focus();
}

function renderTimeline(revisions, selected) {
  const items = revisions.slice().reverse().map((revision) => {
    const item = el("li", null, { "data-version": revision.journal_version });
    const anchor = link(
      artifactHash(shown.coordinate, revision.journal_version, shown.asOf),
      revision.journal_version,
    );
    if (revision.journal_version === selected) anchor.setAttribute("aria-current", "true");
    item.append(anchor, el("span", readable(revision.journal_version), { class: "when" }));
    const releases = revision.releases.map((r) => r.version).join(", ");
    item.append(el("span", releases ? `releases ${releases}` : "no release", { class: "what" }));
    item.append(el("code", revision.digest, { class: "digest" }));
    return item;
  });
  $("timeline").replaceChildren(...items);
}

function stepAsOf(step) {
  const versions = shown.revisions.map((r) => r.journal_version);
  const current = shown.asOf === null
    ? versions.length - 1
    : versions.filter((v) => v <= shown.asOf).length - 1;
  const next = current + step;
  if (next >= versions.length) {
    location.hash = artifactHash(shown.coordinate, null, null);
  } else if (next >= 0) {
    location.hash = artifactHash(shown.coordinate, null, versions[next]);
  }
}

// --- A revision: its text, its differences, its releases, its proof ------------------------

async function showRevision(coordinate, version) {
  const base = `/journal/${enc(coordinate)}`;
  const [revision, text] = await Promise.all([
    getJson(`${base}/exact/${enc(version)}`),
    getJson(`${base}/text/${enc(version)}`),
  ]);
  $("revision-view").hidden = false;
  $("revision-view").dataset.version = version;
  $("revision-title").textContent = `Revision ${version}`;
  const facts = [
    ["Journal version", `${version} (${readable(version)})`],
    ["Digest", revision.digest],
    ["Predecessor", revision.predecessor ?? "none: the genesis"],
    ["Description", revision.description ?? "none"],
    ["Information", revision.information ?? "none"],
    ["Policy", policyText(revision.policy)],
  ];
  $("revision-facts").replaceChildren(
    ...facts.flatMap(([term, value]) => [el("dt", term), el("dd", value)]),
  );
  $("releases").tBodies[0].replaceChildren(...revision.releases.map((release) => {
    const row = el("tr");
    row.append(
      el("th", release.version, { scope: "row" }),
      el("td", release.license),
      el("td", null),
      el("td", policyText(release.policy)),
    );
    row.cells[2].append(el("code", release.content, { class: "digest" }));
    return row;
  }));
  renderDiff(text);
  $("text").textContent = text.text;
  $("proof-status").textContent = "";
  $("proof-status").className = "";
  shown.selected = { coordinate, version, digest: revision.digest, text: text.text };
}

function policyText(policy) {
  if (!policy) return "active";
  return policy.reason ? `${policy.status}: ${policy.reason}` : policy.status;
}

function renderDiff(text) {
  if (text.predecessor_version === null) {
    $("diff").replaceChildren(el("span", "The genesis: no predecessor."));
    return;
  }
  const lines = text.diff.map((line) => {
    let kind = "same";
    if (line.startsWith("+++") || line.startsWith("---")) kind = "file";
    else if (line.startsWith("@@")) kind = "hunk";
    else if (line.startsWith("+")) kind = "added";
    else if (line.startsWith("-")) kind = "removed";
    return el("span", `${line}\n`, { class: kind });
  });
  $("diff").replaceChildren(
    ...(lines.length ? lines : [el("span", "The same text as its predecessor.")]),
  );
}

// --- The inclusion proof, checked here (RFC 6962 / RFC 9162 hashing, C2SP tlog) ------------

class ProofError extends Error {}

const utf8 = new TextEncoder();

async function sha256(...parts) {
  const length = parts.reduce((sum, part) => sum + part.length, 0);
  const joined = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", joined));
}

const leafHash = (data) => sha256(Uint8Array.of(0), data);
const nodeHash = (left, right) => sha256(Uint8Array.of(1), left, right);

function decodeHash(text, what) {
  let bytes;
  try {
    bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    throw new ProofError(`${what} is not base64`);
  }
  if (bytes.length !== 32 || encodeBase64(bytes) !== text) {
    throw new ProofError(`${what} is not one canonical 32-byte hash`);
  }
  return bytes;
}

function encodeBase64(bytes) {
  return btoa(String.fromCharCode(...bytes));
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function sameBytes(a, b) {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

/** The root a proof implies for a leaf hash at index in a tree of size (RFC 9162 2.1.3.2). */
async function rootFromInclusionProof(leaf, index, size, proof) {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) {
    throw new ProofError("the leaf index is not in [0, tree size)");
  }
  let fn = index;
  let sn = size - 1;
  let head = leaf;
  for (const sibling of proof) {
    if (sn === 0) throw new ProofError("the proof is longer than the path to the root");
    if (fn % 2 === 1 || fn === sn) {
      head = await nodeHash(sibling, head);
      // A right-edge node without a sibling moves up unchanged.
      while (fn !== 0 && fn % 2 === 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      head = await nodeHash(head, sibling);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new ProofError("the proof is shorter than the path to the root");
  return head;
}

/** What the proof of the shown revision proves, or a ProofError saying why it proves nothing. */
async function checkProof(selected) {
  const { coordinate, version, digest, text } = selected;
  const path = `/lookup/${enc(coordinate)}/${enc(version)}`;
  const proved = await getJson(path);
  const served = parseCheckpoint(await getText("/checkpoint"));
  const checkpoint = parseCheckpoint(String(proved.checkpoint));
  if (proved.kind !== "inclusion" || proved.tree_size !== checkpoint.size) {
    throw new ProofError("the answer is not an inclusion proof for its checkpoint's tree");
  }
  if (served.size === checkpoint.size && !sameBytes(served.root, checkpoint.root)) {
    throw new ProofError("the proof's checkpoint is not the served checkpoint of its size");
  }
  if (served.size < checkpoint.size) {
    throw new ProofError("the proof's checkpoint is of a larger tree than the served one");
  }
  const textDigest = `sha256:${hex(await sha256(utf8.encode(text)))}`;
  if (textDigest !== digest) throw new ProofError("the text does not hash to its digest");
  const leaf = `${coordinate} ${version} ${digest}\n`;
  if (proved.leaf !== leaf) throw new ProofError("the proof's leaf is not this revision's");
  if (!Array.isArray(proved.inclusion_proof)) throw new ProofError("the proof holds no hashes");
  const proof = proved.inclusion_proof.map((h, i) => decodeHash(String(h), `proof hash ${i}`));
  const root = await rootFromInclusionProof(
    await leafHash(utf8.encode(leaf)), proved.index, checkpoint.size, proof,
  );
  if (!sameBytes(root, checkpoint.root)) {
    throw new ProofError("the root recomputed from the proof is not the checkpoint's root");
  }
  const grown = served.size > checkpoint.size ? ` (the log has ${served.size} now)` : "";
  return `leaf ${proved.index} of the tree of ${checkpoint.size} leaves, ` +
    `root ${encodeBase64(root)} as ${checkpoint.origin} signs it${grown}`;
}

async function onCheckProof() {
  const status = $("proof-status");
  status.className = "";
  status.textContent = "Checking\u2026";
  try {
    status.textContent = `Proof verified: ${await checkProof(shown.selected)}.`;
    status.className = "pass";
  } catch (error) {
    if (!(error instanceof ProofError || error instanceof Unanswered)) throw error;
    status.textContent = `Proof failed: ${error.message}.`;
    status.className = "fail";
  }
}

// --- Routing -------------------------------------------------------------------------------

function parseRoute() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const asOf = new URLSearchParams(query || "").get("as-of");
  if (parts[0] === "a" && parts[1]) {
    return { coordinate: parts[1], version: parts[2] || null, asOf: asOf || null };
  }
  return null;
}

async function route() {
  clearError();
  const wanted = parseRoute();
  $("artifacts-view").hidden = wanted !== null;
  $("artifact-view").hidden = wanted === null;
  if (wanted === null) {
    $("revision-view").hidden = true;
    document.body.classList.remove("artifact");
    if (listing.contains === null && $("artifacts").children.length === 0) await loadArtifacts("");
    return;
  }
  document.body.classList.add("artifact");
  await showArtifact(wanted.coordinate, wanted.version, wanted.asOf);
}

function guarded(action) {
  return (event) => {
    if (event && event.type === "submit") event.preventDefault();
    action(event).catch(showError);
  };
}

document.addEventListener("DOMContentLoaded", () => {
  $("search").addEventListener("submit", guarded(async () => {
    await loadArtifacts($("search-text").value.trim());
  }));
  $("more").addEventListener("click", guarded(async () => {
    const added = await loadMoreArtifacts();
    if (added.length) added[0].querySelector("a").focus();
  }));
  $("as-of").addEventListener("submit", guarded(async () => {
    const version = versionOfInput($("as-of-time").value);
    if (version === null) throw new Unanswered("Pick a date and time to see the chain as of.");
    location.hash = artifactHash(shown.coordinate, null, version);
  }));
  $("as-of-earlier").addEventListener("click", guarded(async () => stepAsOf(-1)));
  $("as-of-later").addEventListener("click", guarded(async () => stepAsOf(1)));
  $("as-of-now").addEventListener("click", guarded(async () => {
    location.hash = artifactHash(shown.coordinate, null, null);
  }));
  $("check-proof").addEventListener("click", guarded(onCheckProof));
  window.addEventListener("hashchange", guarded(route));
  showCheckpoint().catch(showError);
  route().catch(showError);
});
