/**
 * The contract of the codehost-writer actor (codehost-writer.ts): its kind, key and messages, kept apart
 * from the actor so that callers depend on the contract only.
 */
import type { KeyOf } from '../../runtime/ports.js';
import type { CodehostWrite } from '../../connectors/codehost/emit-schema.js';
import type { InstallRef } from '../../connectors/codehost/github-client.js';
import type { WriteOutcome } from '../../connectors/codehost/perform-write.js';

export const CODEHOST_WRITER_KIND = 'codehost-writes';

/** One paced, recorded GitHub write of the installation (spec §4.2). */
export type CodehostWriterProtocol = {
  write: { msg: { install: InstallRef; write: CodehostWrite; idempotencyKey?: string }; answer: WriteOutcome };
};

export function codehostWriterKey(githubInstallationId: number): KeyOf<CodehostWriterProtocol> {
  return { kind: CODEHOST_WRITER_KIND, id: [String(githubInstallationId)] };
}
