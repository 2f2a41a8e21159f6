/**
 * Where neither DATABASE_URL/NATS_URL nor local servers exist but a Docker engine does,
 * testcontainers starts Postgres and NATS (JetStream) for the run. Never required: the
 * suite prefers the machine's own servers (scripts/test.sh decides, TEST_USE_CONTAINERS=1).
 */
export interface TestServices {
  adminDatabaseUrl: string;
  natsUrl: string;
  stop(): Promise<void>;
}

export async function startContainers(): Promise<TestServices> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const pg = await new GenericContainer('postgres:16-alpine')
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  const nats = await new GenericContainer('nats:2.9-alpine')
    .withCommand(['-js'])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .start();
  return {
    adminDatabaseUrl: `postgres://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/postgres`,
    natsUrl: `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`,
    async stop() {
      await Promise.allSettled([pg.stop(), nats.stop()]);
    },
  };
}
