import Foundation
import StructPostgres
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster on the far side of a network link that a test cuts silently, as a cloud network
/// blip, a dead switch or an address moved by a failover does: packets are dropped, and neither side hears a reset
/// or an ICMP error.
///
/// The server runs in a network namespace of its own and is reached over a veth pair. ``cut()`` takes the server's
/// end of the pair down inside the namespace; the client's end keeps a permanent neighbour entry for the server's
/// address, so the kernel neither reports the address unreachable nor drops the route: what the client sends is
/// lost without a word. ``heal()`` brings the link up again. Needs root and iproute2's `ip`
/// (see ``unavailableReason``).
///
/// ```swift
/// let server = try SilentlyCuttableCluster.start()
/// defer { server.stop() }
/// try server.cut()
/// // ... calls made now get no answer ...
/// try server.heal()
/// ```
///
/// ``stop()`` removes the server, the namespace and the link, and so does a watchdog when the process that started
/// them ends in any way.
public final class SilentlyCuttableCluster: Sendable {
    /// The cluster; its ``LocalPostgresCluster/settings`` reach the server over the link, its
    /// ``LocalPostgresCluster/socketDirectory`` over a Unix-domain socket, which a cut does not touch.
    public let cluster: LocalPostgresCluster
    /// The network namespace the server runs in.
    public let namespace: String
    private let clientLink: String
    private let serverLink: String

    /// Settings of the superuser `postgres` on the `postgres` database, over the link.
    public var settings: ConnectionSettings { cluster.settings }

    /// Why a link cannot be made here (not root, no `ip`, network namespaces refused), or `nil` when it can.
    public static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "needs root, to create a network namespace and a veth pair" }
        let probe = "structpg-probe-\(getpid())"
        do {
            try Shell.output("ip", ["netns", "add", probe])
        } catch {
            return "cannot create a network namespace with `ip netns add` (is iproute2 installed, and are namespaces allowed?): \(error)"
        }
        _ = try? Shell.output("ip", ["netns", "del", probe])
        return nil
    }()

    private static let made = Atomic(0)

    /// Creates the namespace and the link, and starts a cluster listening on the server's end. Takes a few seconds.
    public static func start() throws -> SilentlyCuttableCluster {
        if let unavailableReason { throw TestDatabaseError(unavailableReason) }
        let number = made.add(1, ordering: .relaxed).newValue
        let tag = "\(getpid() % 100_000)x\(number)"
        let (namespace, client, server) = ("structpg-\(tag)", "spc\(tag)", "sps\(tag)")
        // A /30 of its own in 10.251.0.0/16, from the process and the link's number.
        let base = (Int(getpid()) * 16 + number) % 16_384 * 4
        let (clientAddress, serverAddress) = ("10.251.\(base / 256).\(base % 256 + 1)", "10.251.\(base / 256).\(base % 256 + 2)")
        Watchdog.start(cleanup: "ip netns del \(namespace) >/dev/null 2>&1; ip link del \(client) >/dev/null 2>&1")
        do {
            try Shell.output("ip", ["netns", "add", namespace])
            try Shell.output("ip", ["link", "add", client, "type", "veth", "peer", "name", server])
            try Shell.output("ip", ["link", "set", server, "netns", namespace])
            try Shell.output("ip", ["addr", "add", clientAddress + "/30", "dev", client])
            try Shell.output("ip", ["link", "set", client, "up"])
            try inside(namespace, ["ip", "link", "set", "lo", "up"])
            try inside(namespace, ["ip", "addr", "add", serverAddress + "/30", "dev", server])
            try inside(namespace, ["ip", "link", "set", server, "up"])
            // Silence: the client's kernel never asks who has the server's address, so a cut link gives no
            // "host unreachable"; it sends into the link, where the packets are dropped.
            let serverMAC = try inside(namespace, ["cat", "/sys/class/net/\(server)/address"]).trimmingCharacters(
                in: .whitespacesAndNewlines)
            try Shell.output("ip", ["neigh", "replace", serverAddress, "lladdr", serverMAC, "dev", client, "nud", "permanent"])
            let cluster = try LocalPostgresCluster.start(listening: (serverAddress, namespace))
            return SilentlyCuttableCluster(cluster: cluster, namespace: namespace, clientLink: client, serverLink: server)
        } catch {
            removeLink(namespace: namespace, client: client)
            throw error
        }
    }

    private init(cluster: LocalPostgresCluster, namespace: String, clientLink: String, serverLink: String) {
        self.cluster = cluster
        self.namespace = namespace
        self.clientLink = clientLink
        self.serverLink = serverLink
    }

    /// Cuts the link silently: from now on, nothing sent either way arrives, and nobody is told.
    public func cut() throws {
        try Self.inside(namespace, ["ip", "link", "set", serverLink, "down"])
    }

    /// Brings the link up again: what TCP sends from now on arrives.
    public func heal() throws {
        try Self.inside(namespace, ["ip", "link", "set", serverLink, "up"])
    }

    /// Heals the link, stops the server and deletes its files, the namespace and the link.
    public func stop() {
        try? heal()
        cluster.stop()
        Self.removeLink(namespace: namespace, client: clientLink)
    }

    @discardableResult
    private static func inside(_ namespace: String, _ command: [String]) throws -> String {
        try Shell.output("ip", ["netns", "exec", namespace] + command)
    }

    private static func removeLink(namespace: String, client: String) {
        _ = try? Shell.output("ip", ["netns", "del", namespace])
        _ = try? Shell.output("ip", ["link", "del", client])
    }
}
