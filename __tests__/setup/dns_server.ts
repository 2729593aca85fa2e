// A DNS server on a loopback UDP port that answers the SRV and TXT records a test gives it, for the
// `mongodb+srv` seed list: the official driver asks it through node:dns (dns.setServers), rumongo
// through the name servers node:dns reports. Names it does not know get NXDOMAIN, a known name
// without records of the asked type an empty answer (NODATA), as a real server answers.
import { createSocket } from 'node:dgram'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import * as packet from 'dns-packet'

export interface SrvTarget {
  name: string
  port: number
  priority?: number
  weight?: number
}

export interface DnsRecords {
  /** SRV records by name (`_mongodb._tcp.cluster.example`). */
  srv?: Record<string, SrvTarget[]>
  /** TXT records by name, each the text of one record. */
  txt?: Record<string, string[]>
  /** Names whose questions get no answer at all (a DNS server that went away). */
  unanswered?: string[]
}

export interface DnsServer {
  /** `127.0.0.1:port`, as dns.setServers and dns.getServers write it. */
  address: string
  /** Every question received, as `TYPE name`. */
  questions: string[]
  stop(): Promise<void>
}

export async function startDnsServer(records: DnsRecords): Promise<DnsServer> {
  const lower = <T>(table: Record<string, T> | undefined) =>
    new Map(Object.entries(table ?? {}).map(([name, value]) => [name.toLowerCase(), value]))
  const srv = lower(records.srv)
  const txt = lower(records.txt)
  const questions: string[] = []
  const socket = createSocket('udp4')
  socket.on('message', (message, peer) => {
    let query: packet.Packet
    try {
      query = packet.decode(message)
    } catch {
      return // not DNS: a real server drops it too
    }
    const unanswered = new Set(records.unanswered?.map((name) => name.toLowerCase()))
    if (query.questions?.some((question) => unanswered.has(question.name.toLowerCase()))) {
      for (const question of query.questions)
        questions.push(`${question.type} ${question.name.toLowerCase()}`)
      return
    }
    const answers: packet.Answer[] = []
    let known = false
    for (const question of query.questions ?? []) {
      const name = question.name.toLowerCase()
      questions.push(`${question.type} ${name}`)
      known ||= srv.has(name) || txt.has(name)
      if (question.type === 'SRV') {
        for (const target of srv.get(name) ?? []) {
          answers.push({
            type: 'SRV',
            name: question.name,
            ttl: 60,
            data: {
              target: target.name,
              port: target.port,
              priority: target.priority ?? 0,
              weight: target.weight ?? 0,
            },
          })
        }
      } else if (question.type === 'TXT') {
        for (const text of txt.get(name) ?? [])
          answers.push({ type: 'TXT', name: question.name, ttl: 60, data: text })
      }
    }
    const reply = packet.encode({
      type: 'response',
      id: query.id,
      // An authoritative answer to a recursive query; NXDOMAIN (rcode 3) for an unknown name.
      flags:
        packet.AUTHORITATIVE_ANSWER | packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE | (known ? 0 : 3),
      questions: query.questions,
      answers,
    })
    socket.send(reply, peer.port, peer.address)
  })
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  return {
    address: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    questions,
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  }
}
