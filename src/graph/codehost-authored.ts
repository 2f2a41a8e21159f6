/**
 * What a code-host user wrote in a webhook payload (INTERFACE §4 kinds), for the erase of a
 * login (INTERFACE §10.5, erase-user.ts) and for the events of that login arriving after it
 * (connectors/codehost/forget-erased.ts): the one rule for both.
 *
 * A webhook payload names its objects (`comment`, `review`, `issue`, `pull_request`,
 * `discussion`, `release`..., and nested ones: a review thread's `thread.comments[]`, a
 * transferred issue's or discussion's new copy under `changes`, a package's version), each
 * with its author (`user`, or `author` for a release); an object written by an erased login
 * loses its `body`, wherever it sits, and so does the event's `changes` (the text before an
 * edit) when the object it describes is theirs. A push names people by
 * `username`: a commit whose author is the login loses its message and the author's name and
 * email, one they committed the committer's name and email; a pusher they are loses the email.
 * Ids, kinds, titles and the login itself stay. Pure.
 */
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The object an event's `changes` describe, by the event's name, when it is not the object named alike. */
const CHANGED_OBJECT: Record<string, string> = {
  issue_comment: 'comment',
  pull_request_review_comment: 'comment',
  commit_comment: 'comment',
  discussion_comment: 'comment',
  pull_request_review: 'review',
  issues: 'issue',
};

function authorOf(o: unknown): string | null {
  if (!isObj(o)) return null;
  const by = isObj(o.user) ? o.user : isObj(o.author) ? o.author : null;
  return by !== null && typeof by.login === 'string' && by.login.length > 0 ? by.login : null;
}

const withoutBody = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'body'));

/** A commit's person as a push names it (`{name, email, username}`): its login, if GitHub knows it. */
const usernameOf = (p: unknown): string | null =>
  isObj(p) && typeof p.username === 'string' && p.username.length > 0 ? p.username : null;
const withoutContact = (p: Obj): Obj =>
  Object.fromEntries(Object.entries(p).filter(([k]) => k !== 'name' && k !== 'email'));
const hasContact = (p: unknown): p is Obj => isObj(p) && (p.name !== undefined || p.email !== undefined);

/** The commits of a push (`commits[]` and `head_commit`). */
const commitsOf = (payload: Obj): unknown[] => [
  ...(Array.isArray(payload.commits) ? payload.commits : []),
  ...(payload.head_commit === undefined ? [] : [payload.head_commit]),
];

/**
 * A commit of a push without what erased logins wrote: the author's message (kept as `''`, as
 * the graph reads a string) and name and email, a committer's name and email. The same object
 * when it holds none of it.
 */
function withoutCommitText(c: unknown, erased: (login: string) => boolean): unknown {
  if (!isObj(c)) return c;
  const author = usernameOf(c.author);
  const committer = usernameOf(c.committer);
  const byAuthor = author !== null && erased(author);
  const byCommitter = committer !== null && erased(committer);
  const out: Obj = { ...c };
  let changed = false;
  if (byAuthor && typeof c.message === 'string' && c.message !== '') [out.message, changed] = ['', true];
  if (byAuthor && hasContact(c.author)) [out.author, changed] = [withoutContact(c.author), true];
  if (byCommitter && hasContact(c.committer)) [out.committer, changed] = [withoutContact(c.committer), true];
  return changed ? out : c;
}

/** Adds the author of every object under `v` (itself included) to `out`. */
function addAuthors(v: unknown, out: Set<string>): void {
  if (Array.isArray(v)) {
    for (const x of v) addAuthors(x, out);
    return;
  }
  if (!isObj(v)) return;
  const login = authorOf(v);
  if (login !== null) out.add(login);
  for (const x of Object.values(v)) if (typeof x === 'object' && x !== null) addAuthors(x, out);
}

/** `v` with no `body` of an object `gone` says is an erased login's, at any depth; `v` itself when none. */
function withoutBodiesOf(v: unknown, gone: (o: unknown) => o is Obj): unknown {
  if (Array.isArray(v)) {
    const a = v.map((x) => withoutBodiesOf(x, gone));
    return a.some((x, i) => x !== v[i]) ? a : v;
  }
  if (!isObj(v)) return v;
  let o: Obj | null = gone(v) ? withoutBody(v) : null;
  for (const [k, x] of Object.entries(v)) {
    if (k === 'body' || typeof x !== 'object' || x === null) continue;
    const y = withoutBodiesOf(x, gone);
    if (y !== x) (o ??= { ...v })[k] = y;
  }
  return o ?? v;
}

/** The logins whose text the payload carries (the authors of its objects, at any depth). */
export function authorsIn(payload: unknown): string[] {
  if (!isObj(payload)) return [];
  const out = new Set<string>();
  for (const v of Object.values(payload)) addAuthors(v, out);
  for (const c of commitsOf(payload)) {
    for (const p of isObj(c) ? [c.author, c.committer] : []) {
      const login = usernameOf(p);
      if (login !== null) out.add(login);
    }
  }
  // A push's pusher is named by its login.
  if (isObj(payload.pusher) && typeof payload.pusher.name === 'string' && payload.pusher.email !== undefined)
    out.add(payload.pusher.name);
  return [...out];
}

/**
 * The payload without the text `erased` logins wrote; the same object when it holds none.
 * `kind` is the event's (`{X-GitHub-Event}.{action}`, INTERFACE §4).
 */
export function withoutAuthorsText(kind: string, payload: unknown, erased: (login: string) => boolean): unknown {
  if (!isObj(payload)) return payload;
  const gone = (o: unknown): o is Obj => {
    const login = authorOf(o);
    return login !== null && erased(login) && isObj(o) && o.body !== undefined;
  };
  let out: Obj | null = null;
  const set = (k: string, v: unknown) => {
    out ??= { ...payload };
    out[k] = v;
  };
  for (const [k, v] of Object.entries(payload)) {
    if (k === 'changes') continue;
    const w = withoutBodiesOf(v, gone);
    if (w !== v) set(k, w);
  }
  if (isObj(payload.changes)) {
    const name = kind.split('.', 1)[0]!;
    const described = payload[CHANGED_OBJECT[name] ?? name];
    const login = authorOf(described);
    const before = login !== null && erased(login) && payload.changes.body !== undefined;
    // The text before the edit (`changes.body.from`) has no author of its own: the edited object's.
    const changes = withoutBodiesOf(before ? withoutBody(payload.changes) : payload.changes, gone);
    if (changes !== payload.changes) set('changes', changes);
  }
  if (Array.isArray(payload.commits)) {
    const commits = payload.commits.map((c) => withoutCommitText(c, erased));
    if (commits.some((c, i) => c !== (payload.commits as unknown[])[i])) set('commits', commits);
  }
  const head = withoutCommitText(payload.head_commit, erased);
  if (head !== payload.head_commit) set('head_commit', head);
  const pusher = payload.pusher;
  if (isObj(pusher) && typeof pusher.name === 'string' && erased(pusher.name) && pusher.email !== undefined)
    set('pusher', Object.fromEntries(Object.entries(pusher).filter(([k]) => k !== 'email')));
  return out ?? payload;
}
