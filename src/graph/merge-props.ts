/**
 * Per-prop last-writer-wins by version (see version.ts): the rule that makes the
 * projection idempotent and order-independent. A message edit that arrives before the
 * message keeps its text, because the message's own (older) version cannot replace it.
 */
import { isDeepStrictEqual } from 'node:util';
import { IDENTITY_VERSION, type Version } from './version.js';

export type Props = Record<string, unknown>;
export type PropVersions = Record<string, Version>;

export interface MergeResult {
  props: Props;
  versions: PropVersions;
  /** A prop's value changed: the node moved (updated_at, change notice). */
  changed: boolean;
  /** Only bookkeeping moved (a newer version of an equal value); still must be stored. */
  versionsChanged: boolean;
}

/**
 * Applies `write` (props set at `version`) to the stored `props`/`versions`. A prop whose
 * stored version is newer keeps its value; an equal version takes the write again (a
 * replay of the same event writes the same value). `undefined` in `write` means "this
 * event says nothing about the prop"; `null` is a value (a deleted message has no text).
 */
export function mergeProps(props: Props, versions: PropVersions, write: Props, version: Version): MergeResult {
  const out: Props = { ...props };
  const outVersions: PropVersions = { ...versions };
  let changed = false;
  let versionsChanged = false;
  for (const [key, value] of Object.entries(write)) {
    if (value === undefined) continue;
    const stored = versions[key];
    if (stored !== undefined && stored > version) continue;
    if (!(key in props) || !isDeepStrictEqual(props[key], value)) {
      out[key] = value;
      changed = true;
    }
    if (stored !== version) {
      outVersions[key] = version;
      versionsChanged = true;
    }
  }
  return { props: out, versions: outVersions, changed, versionsChanged };
}

/** A node write: its identity props at the lowest version, then its props at `version`. */
export function mergeIdentityAndWrite(
  props: Props,
  versions: PropVersions,
  identity: Props,
  write: Props,
  version: Version,
): MergeResult {
  const a = mergeProps(props, versions, identity, IDENTITY_VERSION);
  const b = mergeProps(a.props, a.versions, write, version);
  return {
    props: b.props,
    versions: b.versions,
    changed: a.changed || b.changed,
    versionsChanged: a.versionsChanged || b.versionsChanged,
  };
}
