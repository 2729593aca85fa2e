// `mongodb+srv://`: the seed list from SRV records and the options of the TXT record (authSource,
// replicaSet, loadBalanced), and srvMaxHosts, from a DNS server on loopback
// (setup/dns_server.ts) that both drivers ask: the official driver through node:dns
// (dns.setServers), rumongo through the name servers node:dns reports (dns.getServers()).
// The names are under `.test` (RFC 6761, for testing; the Rust driver's resolver answers `.invalid`
// itself without asking): an SRV record must name subdomains of the cluster's domain, which no hosts
// file resolves, so connections fail the same way in both drivers, and the rest of what the lookup
// gave is compared on what rumongo's connection string path made of it (a test hook).
import dns from 'node:dns'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MongoClient as OfficialClient } from 'mongodb'
import { MongoAPIError, MongoClient, MongoError, MongoNetworkError, MongoServerSelectionError } from 'rumongo'
import { startDnsServer, type DnsServer } from './setup/dns_server.js'

const requireCjs = createRequire(import.meta.url)
const { testResolveConnectionString } = requireCjs('../dist/native.cjs') as {
  testResolveConnectionString(uri: string, dnsServers: string[]): Promise<string>
}

const HOSTS = ['host1.srv.test:27017', 'host2.srv.test:27018', 'host3.srv.test:27019']
const target = (host: string) => ({ name: host.split(':')[0]!, port: Number(host.split(':')[1]) })

let server: DnsServer
let systemServers: string[]

beforeAll(async () => {
  server = await startDnsServer({
    srv: {
      '_mongodb._tcp.rs.srv.test': HOSTS.map(target),
      '_mongodb._tcp.sharded.srv.test': HOSTS.map(target),
      '_mongodb._tcp.lb.srv.test': [target('balancer.srv.test:27017')],
      '_mongodb._tcp.single.srv.test': [target('host1.srv.test:27017')],
      // Hosts outside the domain of the connection string, which both drivers refuse.
      '_mongodb._tcp.elsewhere.srv.test': [target('host1.elsewhere.test:27017')],
      '_mongodb._tcp.srv.test': [target('srv.test:27017')],
      // A name that exists without SRV records: an empty answer (NODATA).
      '_mongodb._tcp.nodata.srv.test': [],
    },
    txt: {
      'rs.srv.test': ['replicaSet=rs0&authSource=users'],
      'sharded.srv.test': ['authSource=users'],
      'lb.srv.test': ['loadBalanced=true'],
    },
    unanswered: ['_mongodb._tcp.silent.srv.test'],
  })
  systemServers = dns.getServers()
  dns.setServers([server.address])
})

afterAll(async () => {
  dns.setServers(systemServers)
  await server.stop()
})

interface Resolved {
  hosts: string[]
  replicaSet?: string
  authSource?: string
  loadBalanced: boolean
}

/** What the official driver made of `uri` (it resolves the SRV record in `connect()`). */
async function officialResolved(uri: string): Promise<Resolved> {
  const client = new OfficialClient(uri)
  await client.connect().catch(() => undefined)
  await client.close()
  const { hosts, replicaSet, credentials, loadBalanced } = client.options
  return { hosts: hosts.map(String), replicaSet, authSource: credentials?.source, loadBalanced }
}

/** What rumongo's connection string path made of `uri`, with the name servers node:dns uses. */
async function rumongoResolved(uri: string): Promise<Resolved> {
  const resolved = JSON.parse(await testResolveConnectionString(uri, dns.getServers()))
  return {
    hosts: resolved.hosts,
    replicaSet: resolved.replicaSet ?? undefined,
    authSource: resolved.authSource ?? undefined,
    loadBalanced: resolved.loadBalanced ?? false,
  }
}

describe('mongodb+srv', () => {
  it('asks the DNS server dns.setServers names, on the connection path, as the official driver', async () => {
    // The load balancer the records name does not resolve (no hosts file has it), so both drivers
    // fail on it, at once (a load-balanced topology selects no server): after the SRV and TXT
    // lookups, which rumongo made through the name servers of node:dns.
    const failures = []
    for (const Client of [OfficialClient, MongoClient]) {
      const questions = server.questions.length
      const client = new Client('mongodb+srv://lb.srv.test/?serverSelectionTimeoutMS=500')
      failures.push(
        await client.connect().then(
          () => undefined,
          (error: unknown) => error as MongoNetworkError,
        ),
      )
      await client.close()
      expect(server.questions.slice(questions).sort()).toEqual([
        'SRV _mongodb._tcp.lb.srv.test',
        'TXT lb.srv.test',
      ])
    }
    const [official, rumongo] = failures
    expect(rumongo).toBeInstanceOf(MongoNetworkError)
    expect(rumongo?.name).toBe(official?.name)
    expect((rumongo?.cause as NodeJS.ErrnoException | undefined)?.code).toBe('ENOTFOUND')
    expect((official?.cause as NodeJS.ErrnoException | undefined)?.code).toBe('ENOTFOUND')
  })

  it.each([
    ['a replica set and authSource from TXT', 'mongodb+srv://u:p@rs.srv.test/'],
    ['authSource from TXT', 'mongodb+srv://u:p@sharded.srv.test/'],
    [
      'an authSource of the connection string over TXT',
      'mongodb+srv://u:p@sharded.srv.test/?authSource=admin',
    ],
    ['loadBalanced from TXT', 'mongodb+srv://lb.srv.test/'],
  ])('reads %s as the official driver', async (_, uri) => {
    const timeout = `${uri.includes('?') ? '&' : '?'}serverSelectionTimeoutMS=200`
    const official = await officialResolved(uri + timeout)
    const rumongo = await rumongoResolved(uri)
    expect({ ...rumongo, hosts: rumongo.hosts.sort() }).toEqual({ ...official, hosts: official.hosts.sort() })
  })

  it('keeps srvMaxHosts of the hosts, as the official driver', async () => {
    // The official driver lists every host in client.options; the servers it opens are the ones kept.
    const official = new OfficialClient(
      'mongodb+srv://sharded.srv.test/?srvMaxHosts=2&serverSelectionTimeoutMS=200',
    )
    const opened: string[] = []
    official.on('serverOpening', (event) => opened.push(event.address))
    await official.connect().catch(() => undefined)
    await official.close()
    const rumongo = await rumongoResolved('mongodb+srv://sharded.srv.test/?srvMaxHosts=2')
    expect(opened).toHaveLength(2)
    expect(rumongo.hosts).toHaveLength(2)
    for (const host of [...opened, ...rumongo.hosts]) expect(HOSTS).toContain(host)
  })

  it('fails at serverSelectionTimeoutMS when the hosts do not resolve, as the official driver', async () => {
    // The crate's SRV rescan task slept its 60 s interval out before the client's shutdown could
    // finish, so a connect that failed its selection rejected a minute later.
    const uri = 'mongodb+srv://single.srv.test/?serverSelectionTimeoutMS=1000'
    const failures = []
    for (const Client of [OfficialClient, MongoClient]) {
      const client = new Client(uri)
      const outcome = await Promise.race([
        client.connect().then(
          () => 'connected',
          (error: unknown) => error as MongoServerSelectionError,
        ),
        sleep(5000).then(() => 'still waiting after 5 s'),
      ])
      await client.close()
      failures.push(outcome)
    }
    const [official, rumongo] = failures as MongoServerSelectionError[]
    expect(official).toBeInstanceOf(Error)
    expect(rumongo).toBeInstanceOf(MongoServerSelectionError)
    expect(rumongo?.name).toBe(official?.name)
    expect(rumongo?.message).toBe(official?.message)
    expect(rumongo?.message).toBe('getaddrinfo ENOTFOUND host1.srv.test')
  }, 20_000)

  it.each([
    ['a host of another domain', 'elsewhere.srv.test'],
    ['a host without a domain level more than a two-part name', 'srv.test'],
  ])('refuses %s as the official driver: MongoAPIError', async (_, name) => {
    const failures = []
    for (const Client of [OfficialClient, MongoClient]) {
      const client = new Client(`mongodb+srv://${name}/?serverSelectionTimeoutMS=500`)
      failures.push(
        await client.connect().then(
          () => undefined,
          (error: unknown) => error as MongoAPIError,
        ),
      )
      await client.close()
    }
    const [official, rumongo] = failures
    expect(rumongo).toBeInstanceOf(MongoAPIError)
    expect({ name: rumongo?.name, message: rumongo?.message, code: rumongo?.code }).toEqual({
      name: official?.name,
      message: official?.message,
      code: official?.code,
    })
    expect(official?.name).toBe('MongoAPIError')
  })

  /** node:dns's own error fields, which the official driver throws as they are. */
  const dnsFailure = (error: unknown) => {
    const { name, message, code, syscall, hostname } = error as NodeJS.ErrnoException & { hostname?: string }
    return { name, message, code, syscall, hostname, mongo: error instanceof MongoError }
  }

  it.each([
    ['a name without SRV records (NODATA)', 'nodata.srv.test', 'ENODATA'],
    ['a name that does not exist (NXDOMAIN)', 'missing.srv.test', 'ENOTFOUND'],
  ])("fails on %s with node:dns's plain Error, as the official driver", async (_, name, code) => {
    const failures = []
    for (const Client of [OfficialClient, MongoClient]) {
      const client = new Client(`mongodb+srv://${name}/?serverSelectionTimeoutMS=500`)
      failures.push(
        dnsFailure(
          await client.connect().then(
            () => undefined,
            (error: unknown) => error,
          ),
        ),
      )
      await client.close()
    }
    const [official, rumongo] = failures
    expect(official).toEqual({
      name: 'Error',
      message: `querySrv ${code} _mongodb._tcp.${name}`,
      code,
      syscall: 'querySrv',
      hostname: `_mongodb._tcp.${name}`,
      mongo: false,
    })
    expect(rumongo).toEqual(official)
  })

  it("fails on a DNS server that never answers with node:dns's ETIMEOUT Error, sooner", async () => {
    // The official driver waits for node:dns's retries (about 43 s here) and throws its plain
    // Error `querySrv ETIMEOUT _mongodb._tcp.<host>` (code ETIMEOUT, syscall querySrv, hostname);
    // rumongo throws the same error after its resolver's retries (3 tries of 5 s), not compared
    // side by side for the official driver's duration.
    const client = new MongoClient('mongodb+srv://silent.srv.test/')
    const started = Date.now()
    const failure = dnsFailure(
      await client.connect().then(
        () => undefined,
        (error: unknown) => error,
      ),
    )
    await client.close()
    expect(failure).toEqual({
      name: 'Error',
      message: 'querySrv ETIMEOUT _mongodb._tcp.silent.srv.test',
      code: 'ETIMEOUT',
      syscall: 'querySrv',
      hostname: '_mongodb._tcp.silent.srv.test',
      mongo: false,
    })
    expect(Date.now() - started).toBeLessThan(40_000)
  }, 60_000)
})
