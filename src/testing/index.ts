/**
 * `connector-service/testing`: the Slack, GitHub and indexer-daemon fakes this service is
 * tested against, for tenants to test their own integration the same way. Each fake is a
 * real HTTP (and, for Socket Mode, WebSocket) server on a loopback port that the real SDKs
 * talk to; seed its state, inject faults, read the calls it recorded, send signed events.
 * This file is the package's public entry point: it lists what is exported.
 */
export { FakeSlack, type FakeSlackOptions, type RecordedCall as SlackRecordedCall } from './slack-fake.js';
export { FakeSocketMode } from './slack-socket.js';
export { SlackDelivery, liveTs, type DeliveryRecord } from './slack-delivery.js';
export {
  nextTs,
  randomId,
  type ChannelType,
  type FakeChannel,
  type FakeFile as SlackFile,
  type FakeMessage,
  type FakeTeam,
  type FakeToken,
} from './slack-model.js';
export {
  eventEnvelope,
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  reactionEvent,
  signedHeaders,
  type Signing,
} from './slack-events.js';
export { FakeGitHub, type FailRule, type FakeInstallation, type RecordedCall as GitHubRecordedCall } from './github.js';
export { checkAppJwt, generateAppKeyPair, type AppKeyPair } from './github-jwt.js';
export { seedRepos, type FakePull, type FakeRepo } from './github-pulls.js';
export {
  seedReviewComment,
  type FakeComment,
  type FakeFile as GitHubFile,
  type FakeReviewComment,
} from './github-repos.js';
export { FakeIndexerDaemon, type DaemonCall, type DaemonSwitches } from './indexer-daemon.js';
export { githubSignature, sendGithubWebhook, signedGithubDelivery, type GithubDelivery } from './github-webhooks.js';
