import Operations

/// The dependency graph of some operations, with each one's state and outcome and the
/// cycles marked: write it with ``dot()`` (Graphviz) or ``mermaid()``.
///
/// Make it from live operations (``init(_:title:)``, which follows dependencies transitively) or
/// from a ``Recording`` (``Recording/graph``).
public struct OperationGraph: Sendable {
    /// An operation in the graph.
    public struct Node: Sendable {
        /// Its index in ``OperationGraph/nodes``.
        public let id: Int
        /// Its name, or its type and number.
        public let name: String
        /// `pending`, `executing` or `finished` (when the graph was made).
        public let state: String
        /// How it ended, for a finished operation.
        public let outcome: Recording.Outcome?
        /// Whether it is part of a dependency cycle.
        public let isInCycle: Bool
    }

    /// `dependency` must finish before `dependent` starts.
    public struct Edge: Sendable, Hashable {
        /// The operation waited for (index in ``OperationGraph/nodes``).
        public let dependency: Int
        /// The operation that waits.
        public let dependent: Int
        /// Whether the edge is part of a dependency cycle.
        public let isInCycle: Bool
    }

    /// A title, for the files written.
    public let title: String
    /// The operations.
    public let nodes: [Node]
    /// The dependencies, in the order of ``nodes`` and of each one's dependencies.
    public let edges: [Edge]

    /// The cycles: each a set of node indices that wait for each other, in node order.
    public var cycles: [[Int]] {
        Self.stronglyConnected(count: nodes.count, edges: edges.map { ($0.dependency, $0.dependent) })
            .filter { component in component.count > 1 || edges.contains { $0.dependency == component[0] && $0.dependent == component[0] } }
    }

    /// The graph of `operations` and everything they depend on, transitively.
    public init(_ operations: [Operation], title: String = "Dependencies") {
        var all: [Operation] = []
        var index: [ObjectIdentifier: Int] = [:]
        var queue = operations
        var next = 0
        while next < queue.count {
            let operation = queue[next]
            next += 1
            guard index[ObjectIdentifier(operation)] == nil else { continue }
            index[ObjectIdentifier(operation)] = all.count
            all.append(operation)
            queue.append(contentsOf: operation.dependencies)
        }
        var unnamed: [String: Int] = [:]
        let names = all.map { operation -> String in
            if let name = operation.name { return name }
            let type = "\(type(of: operation))"
            unnamed[type, default: 0] += 1
            return "\(type) \(unnamed[type]!)"
        }
        let raw = all.enumerated().flatMap { position, operation in
            operation.dependencies.compactMap { index[ObjectIdentifier($0)] }.map { ($0, position) }
        }
        let states = all.map { operation -> (String, Recording.Outcome?) in
            if operation.isFinished { return ("finished", RecorderState.outcome(of: operation) ?? .succeeded) }
            return (operation.isExecuting ? "executing" : "pending", nil)
        }
        self.init(title: title, names: names, states: states, edges: raw)
    }

    init(title: String, names: [String], states: [(String, Recording.Outcome?)], edges raw: [(Int, Int)]) {
        self.title = title
        var inCycle = Set<Int>()
        var component = [Int](repeating: -1, count: names.count)
        let components = Self.stronglyConnected(count: names.count, edges: raw)
        for (number, members) in components.enumerated() {
            for member in members { component[member] = number }
            if members.count > 1 { inCycle.formUnion(members) }
        }
        for (from, to) in raw where from == to { inCycle.insert(from) }
        nodes = names.indices.map { Node(id: $0, name: names[$0], state: states[$0].0, outcome: states[$0].1, isInCycle: inCycle.contains($0)) }
        edges = raw.map { Edge(dependency: $0.0, dependent: $0.1, isInCycle: component[$0.0] == component[$0.1] && inCycle.contains($0.0)) }
    }

    /// Tarjan's strongly connected components, without recursion (graphs of thousands of
    /// operations in a chain must not exhaust a thread's stack).
    static func stronglyConnected(count: Int, edges: [(Int, Int)]) -> [[Int]] {
        var successors = [[Int]](repeating: [], count: count)
        for (from, to) in edges { successors[from].append(to) }
        var index = [Int](repeating: -1, count: count), low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = [], components: [[Int]] = []
        var counter = 0
        for root in 0..<count where index[root] < 0 {
            var work: [(node: Int, next: Int)] = [(root, 0)]
            index[root] = counter; low[root] = counter; counter += 1
            stack.append(root); onStack[root] = true
            while let (node, next) = work.last {
                if next < successors[node].count {
                    work[work.count - 1].next += 1
                    let successor = successors[node][next]
                    if index[successor] < 0 {
                        index[successor] = counter; low[successor] = counter; counter += 1
                        stack.append(successor); onStack[successor] = true
                        work.append((successor, 0))
                    } else if onStack[successor] {
                        low[node] = min(low[node], index[successor])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last { low[parent.node] = min(low[parent.node], low[node]) }
                if low[node] == index[node] {
                    var members: [Int] = []
                    while let member = stack.popLast() {
                        onStack[member] = false
                        members.append(member)
                        if member == node { break }
                    }
                    components.append(members.sorted())
                }
            }
        }
        return components
    }
}

extension Recording {
    /// The dependency graph of the recorded operations, with their state and outcome when
    /// the recording stopped.
    public var graph: OperationGraph {
        OperationGraph(
            title: title, names: operations.map(\.name),
            states: operations.map { operation in
                if operation.finished != nil { return ("finished", operation.outcome) }
                return (operation.started != nil ? "executing" : "pending", nil)
            },
            edges: operations.flatMap { operation in operation.dependencies.map { ($0, operation.id) } })
    }
}
