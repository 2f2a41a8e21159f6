/**
 * What an erased login wrote in a webhook payload (INTERFACE §10.5, graph/codehost-authored.ts):
 * the body of each top-level object they authored, the text before their edit, a transferred
 * issue's new copy; nobody else's text, and the same object when nothing is theirs.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { authorsIn, withoutAuthorsText } from '../../src/graph/codehost-authored.js';

const by = (login: string) => ({ login, id: 1, type: 'User' });
const erased = (login: string) => login === 'gone';

describe('withoutAuthorsText', () => {
  it("drops the erased login's bodies and keeps the others'", () => {
    const payload = {
      action: 'created',
      issue: { number: 1, title: 'T', body: 'issue text', user: by('gone') },
      comment: { id: 2, body: 'reply text', user: by('kept') },
      sender: by('kept'),
    };
    expect(authorsIn(payload).sort()).toEqual(['gone', 'kept']);
    expect(withoutAuthorsText('issue_comment.created', payload, erased)).toEqual({
      ...payload,
      issue: { number: 1, title: 'T', user: by('gone') },
    });
    expect(payload.issue.body).toBe('issue text');
  });

  it('drops the text before an edit only when the edited object is theirs', () => {
    const edit = (author: string) => ({
      issue: { number: 1, title: 'T', body: 'b', user: by('kept') },
      comment: { id: 2, body: 'now', user: by(author) },
      changes: { body: { from: 'before' } },
    });
    expect(withoutAuthorsText('issue_comment.edited', edit('gone'), erased)).toMatchObject({ changes: {} });
    expect(withoutAuthorsText('issue_comment.edited', edit('gone'), erased)).not.toHaveProperty('changes.body');
    const theirs = edit('kept');
    expect(withoutAuthorsText('issue_comment.edited', theirs, erased)).toBe(theirs);
    const review = { review: { id: 3, body: 'r', user: by('gone') }, changes: { body: { from: 'old r' } } };
    expect(withoutAuthorsText('pull_request_review.edited', review, erased)).toEqual({
      review: { id: 3, user: by('gone') },
      changes: {},
    });
  });

  it('covers a release (its author) and a transferred issue (its new copy)', () => {
    const release = { release: { id: 4, name: 'v1', body: 'notes', author: by('gone') } };
    expect(withoutAuthorsText('release.published', release, erased)).toEqual({
      release: { id: 4, name: 'v1', author: by('gone') },
    });
    const moved = {
      issue: { number: 1, title: 'T', body: 'b', user: by('gone') },
      changes: { new_issue: { number: 9, title: 'T', body: 'b', user: by('gone') }, new_repository: { id: 1 } },
    };
    expect(authorsIn({ changes: moved.changes })).toEqual(['gone']);
    expect(withoutAuthorsText('issues.transferred', moved, erased)).toEqual({
      issue: { number: 1, title: 'T', user: by('gone') },
      changes: { new_issue: { number: 9, title: 'T', user: by('gone') }, new_repository: { id: 1 } },
    });
  });

  it("drops a push's commit messages, names and emails of the login, and the pusher's email", () => {
    const person = (username: string) => ({ name: `${username} name`, email: `${username}@x.test`, username });
    const commit = (id: string, author: string, committer = author) => ({
      id,
      message: `message ${id}`,
      author: person(author),
      committer: person(committer),
    });
    const push = {
      ref: 'refs/heads/main',
      commits: [commit('a', 'gone'), commit('b', 'kept', 'gone'), commit('c', 'kept')],
      head_commit: commit('a', 'gone'),
      pusher: { name: 'gone', email: 'gone@x.test' },
    };
    expect(authorsIn(push).sort()).toEqual(['gone', 'kept']);
    const out = withoutAuthorsText('push', push, erased) as typeof push;
    expect(out.commits[0]).toEqual({
      id: 'a',
      message: '',
      author: { username: 'gone' },
      committer: { username: 'gone' },
    });
    expect(out.commits[1]).toEqual({ ...commit('b', 'kept', 'gone'), committer: { username: 'gone' } });
    expect(out.commits[2]).toBe(push.commits[2]);
    expect(out.head_commit).toEqual(out.commits[0]);
    expect(out.pusher).toEqual({ name: 'gone' });
    expect(withoutAuthorsText('push', out, erased)).toBe(out);
  });

  it('in every recorded GitHub webhook, each body a login wrote goes with the login, wherever it is nested', () => {
    // A pull request's review thread carries its comments (`thread.comments[]`), a transferred
    // discussion its new copy, a package its version's notes: not only the top-level objects.
    const webhooks = createRequire(import.meta.url)('@octokit/webhooks-examples') as Array<{
      name: string;
      examples: Array<Record<string, unknown>>;
    }>;
    const authoredBodies = (v: unknown, path: string, out: Array<{ path: string; login: string }>) => {
      if (Array.isArray(v)) v.forEach((x, i) => authoredBodies(x, `${path}[${i}]`, out));
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
      const o = v as Record<string, any>;
      const login: unknown = o.user?.login ?? o.author?.login;
      if (typeof o.body === 'string' && o.body !== '' && typeof login === 'string') out.push({ path, login });
      for (const [k, x] of Object.entries(o)) authoredBodies(x, `${path}.${k}`, out);
      return out;
    };
    let checked = 0;
    const kept: string[] = [];
    for (const hook of webhooks) {
      for (const example of hook.examples) {
        const kind = typeof example.action === 'string' ? `${hook.name}.${example.action}` : hook.name;
        for (const { login } of authoredBodies(example, '', [])) {
          checked++;
          expect(authorsIn(example), `${kind}: ${login} among the authors`).toContain(login);
          const out = withoutAuthorsText(kind, example, (l) => l === login);
          for (const left of authoredBodies(out, '', [])) {
            if (left.login === login) kept.push(`${kind} ${left.path}`);
          }
          // Another login's text stays where it was.
          const others = authoredBodies(example, '', []).filter((b) => b.login !== login);
          expect(authoredBodies(out, '', []).filter((b) => b.login !== login)).toEqual(others);
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(kept).toEqual([]);
  });

  it('leaves what is not an object as it is', () => {
    expect(withoutAuthorsText('push', null, erased)).toBeNull();
    expect(authorsIn([by('gone')])).toEqual([]);
  });
});
