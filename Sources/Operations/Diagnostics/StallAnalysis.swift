/// Finds the operations, among some that a thread waits for, that cannot make progress
/// without someone else acting: a dependency cycle, a deadlock of waits, a dependency in no
/// queue, a suspended queue, a limit of 0 (directly or through any chain of waits).
///
/// Reads the wait graph (`WaitGraph`) as an and-or graph: an operation progresses when
/// nothing of its own stops it (``Operation/waitReasons``) and every edge it waits on ends
/// — an all-of edge when each target progresses, an any-of edge (a slot) when one does.
/// What progresses is found from the operations that progress by themselves outwards, so
/// a cycle counts as stuck only when no wait on it can end by itself. Takes no lock of its
/// own and may call overridden getters; iterative, so a chain of thousands of operations
/// does not exhaust a thread's stack.
struct StallAnalysis {
    /// Why an operation cannot make progress: the root cause, for a person.
    typealias Cause = String

    /// One operation of the part of the graph the waits reach.
    private struct Node {
        let operation: Operation
        /// What stops it by itself (a suspended queue, no queue, a limit of 0).
        let ownCause: Cause?
        /// Finished: it progresses whatever it waited for.
        let isDone: Bool
        /// The edges it waits on, each with its targets' node indices.
        var edges: [(edge: WaitEdge, targets: [Int])] = []
        /// Edges not known to end yet.
        var openEdges = 0
        var progresses = false
    }

    private var nodes: [Node] = []
    private let slotHolders = WaitGraph.SlotHolders()
    private var index: [ObjectIdentifier: Int] = [:]

    /// The operations of `targets` that cannot make progress, each with its cause.
    ///
    /// The graph is read one operation at a time while others move on, so one reading can
    /// pair edges from before and after a change (a group opening its children's queue); an
    /// operation is stuck only when a second reading, made after the first, agrees.
    static func stuck(among targets: [Operation]) -> [(operation: Operation, cause: Cause)] {
        let first = reading(of: targets)
        guard !first.isEmpty else { return [] }
        let confirmed = Set(reading(of: first.map(\.operation)).map { ObjectIdentifier($0.operation) })
        return first.filter { confirmed.contains(ObjectIdentifier($0.operation)) }
    }

    /// One reading of the graph from `targets`.
    private static func reading(of targets: [Operation]) -> [(operation: Operation, cause: Cause)] {
        var analysis = StallAnalysis()
        let roots = targets.map { analysis.node(for: $0) }
        analysis.explore()
        analysis.propagate()
        var causes: [Int: Cause] = [:]
        return zip(targets, roots).compactMap { target, root in
            analysis.nodes[root].progresses ? nil : (target, analysis.cause(of: root, known: &causes))
        }
    }

    /// The index of `operation`'s node, made (its edges still to read) on first sight.
    private mutating func node(for operation: Operation) -> Int {
        if let known = index[ObjectIdentifier(operation)] { return known }
        let (ownCause, isDone) = Self.own(operation)
        nodes.append(Node(operation: operation, ownCause: ownCause, isDone: isDone))
        index[ObjectIdentifier(operation)] = nodes.count - 1
        return nodes.count - 1
    }

    /// Reads the edges of every node reachable from those made so far.
    private mutating func explore() {
        var next = 0
        while next < nodes.count {
            defer { next += 1 }
            guard !nodes[next].isDone, nodes[next].ownCause == nil else { continue }
            let operation = nodes[next].operation
            var edges: [(WaitEdge, [Int])] = []
            for edge in WaitGraph.edges(of: operation, slots: .included(slotHolders)) where !edge.isDormant {
                edges.append((edge, edge.targets.map { node(for: $0) }))
            }
            nodes[next].edges = edges
            nodes[next].openEdges = edges.count
        }
    }

    /// Marks what progresses, from the nodes that progress by themselves outwards.
    private mutating func propagate() {
        // Who waits on each node: (waiting node, edge index).
        var waiting: [[(node: Int, edge: Int)]] = Array(repeating: [], count: nodes.count)
        var remaining: [[Int]] = []
        var ready: [Int] = []
        for (id, node) in nodes.enumerated() {
            remaining.append(node.edges.map { $0.edge.isAnyOf ? 1 : $0.targets.count })
            for (edgeIndex, edge) in node.edges.enumerated() {
                for target in edge.targets { waiting[target].append((id, edgeIndex)) }
            }
            if node.isDone || (node.ownCause == nil && node.openEdges == 0) { ready.append(id) }
        }
        for id in ready { nodes[id].progresses = true }
        while let id = ready.popLast() {
            for (waiter, edge) in waiting[id] where !nodes[waiter].progresses && remaining[waiter][edge] > 0 {
                remaining[waiter][edge] -= 1
                guard remaining[waiter][edge] == 0 else { continue }
                nodes[waiter].openEdges -= 1
                if nodes[waiter].openEdges == 0, nodes[waiter].ownCause == nil {
                    nodes[waiter].progresses = true
                    ready.append(waiter)
                }
            }
        }
    }

    /// The root cause of a stuck node: its own, or, following an edge that does not end,
    /// the cause it leads to — a cycle named by its members when it comes back.
    private func cause(of root: Int, known: inout [Int: Cause]) -> Cause {
        var path: [Int] = []
        var kinds: [WaitEdge.Kind] = []
        var onPath: [Int: Int] = [:]
        var current = root
        var found: Cause
        while true {
            if let cause = known[current] {
                found = cause
                break
            }
            let node = nodes[current]
            if let own = node.ownCause {
                found = own
                break
            }
            if let position = onPath[current] {
                let names = path[position...].map { nodes[$0].operation._stallName } + [node.operation._stallName]
                let inWait = kinds[position...].contains { $0 == .blockedWait || $0 == .slot }
                found = inWait
                    ? "deadlock \(names.joined(separator: " → ")) (each waits for the next: a wait inside a running operation for work that needs the slot it holds, or that it depends on)"
                    : "dependency cycle \(names.joined(separator: " → ")) (each waits for the next; cancel one to break it)"
                break
            }
            // An edge that does not end, and on it a target that does not progress.
            guard let (edge, targets) = node.edges.first(where: { edge in edge.targets.contains { !nodes[$0].progresses } }),
                let next = targets.first(where: { !nodes[$0].progresses })
            else {
                found = "\(node.operation._stallName): it waits for work that does not progress"
                break
            }
            onPath[current] = path.count
            path.append(current)
            kinds.append(edge.kind)
            current = next
        }
        for id in path { known[id] = found }
        return found
    }

    /// What stops `operation` by itself, and whether it has finished, from its wait reasons.
    private static func own(_ operation: Operation) -> (cause: Cause?, isDone: Bool) {
        for reason in operation.waitReasons {
            switch reason {
            case .finished:
                return (nil, true)
            case .concurrencyLimit(let queue, let limit) where limit == 0:
                return ("\(operation._stallName): \(Operation.WaitReason.concurrencyLimit(queue, limit: 0))", false)
            case .queueSuspended(let queue):
                // A suspension the library made for the queue's owner (a group not started
                // yet) is an edge to the owner, not a stop.
                if let source = queue as? any WaitGraphSource, source.waitEdges(of: operation).contains(where: { $0.kind == .owner }) {
                    continue
                }
                return ("\(operation._stallName): \(reason)", false)
            case .notInQueue, .finishedWithoutAnnouncement:
                return ("\(operation._stallName): \(reason)", false)
            case .executing, .waitingForWorker, .isReadyReturnsFalse, .gate, .concurrencyLimit,
                .dependency, .barrier:
                continue
            }
        }
        return (nil, false)
    }
}

extension StallAnalysis {
    /// One line for a person: the stuck operations (the first few) and their causes.
    static func describe(_ stuck: [(operation: Operation, cause: Cause)], limit: Int = 5) -> String {
        var parts: [String] = []
        for (operation, cause) in stuck.prefix(limit) {
            parts.append(cause.hasPrefix(operation._stallName + ":") ? cause : "\(operation._stallName) waits on \(cause)")
        }
        if stuck.count > limit { parts.append("and \(stuck.count - limit) more") }
        return parts.joined(separator: "; ")
    }
}

extension Operation {
    /// How stall reports name an operation: `"name"`, or `<Type: 0x…>`.
    var _stallName: String {
        if let name { return "\"\(name)\"" }
        return "<\(type(of: self)): \(_address)>"
    }
}
