@testable import Operations
import OperationsTestSupport
import Testing

/// The order that keeps the dependency graph acyclic (`DependencyGraph`): whatever order the
/// edges come in, and whichever of its cases an edge takes (moving an operation after or
/// before every other, or reordering a region), a new edge closes a cycle exactly when the
/// dependent already reaches the dependency.
@Suite("Dependency order: cycles are detected exactly, whatever moved")
struct DependencyOrderTests {
    @Test("an edge is a cycle exactly when its dependent reaches its dependency", arguments: [11, 12, 13, 14])
    func cyclesMatchReachability(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let count = 80
        let operations = (0..<count).map { _ in Operation() }
        // Edges of a DAG over a random ranking, added in random order: sinks made first,
        // roots made last and everything between.
        let rank = Array(0..<count).shuffled(using: &generator)
        var dependents = [[Int]](repeating: [], count: count)
        for _ in 0..<240 {
            let a = Int.random(in: 0..<count, using: &generator), b = Int.random(in: 0..<count, using: &generator)
            guard rank[a] < rank[b] else { continue }
            operations[b].addDependency(operations[a])
            dependents[a].append(b)
        }
        func reaches(_ from: Int, _ to: Int) -> Bool {
            var seen = Set([from]), stack = [from]
            while let node = stack.popLast() {
                if node == to { return true }
                for next in dependents[node] where seen.insert(next).inserted { stack.append(next) }
            }
            return false
        }
        var mismatches: [String] = []
        for _ in 0..<400 {
            let dependency = Int.random(in: 0..<count, using: &generator)
            let dependent = Int.random(in: 0..<count, using: &generator)
            guard dependency != dependent else { continue }
            // Asked of the graph without registering the edge: a reordering it makes agrees with
            // the edges that exist too.
            let insertion = DependencyGraph.insert(from: operations[dependency], to: operations[dependent]) { () }
            let isCycle: Bool
            switch insertion {
            case .inserted: isCycle = false
            case .cycle: isCycle = true
            }
            if isCycle != reaches(dependent, dependency) {
                mismatches.append("\(dependency) → \(dependent): cycle \(isCycle)")
            }
        }
        #expect(mismatches.isEmpty, "seed \(seed)")
    }

    @Test("a sink made before its sources, and a root made after its leaves, run in dependency order")
    func sinkFirstAndRootLast() {
        let record = Shared<[String]>([])
        func position(_ operation: Operation) -> Int { operation._position.load(ordering: .relaxed) }
        let sink = BlockOperation { record.update { $0.append("sink") } }
        let sources = (0..<50).map { index in BlockOperation { record.update { $0.append("source \(index)") } } }
        let sourcePositions = sources.map(position)
        for source in sources { sink.addDependency(source) }
        let leaves = (0..<50).map { index in BlockOperation { record.update { $0.append("leaf \(index)") } } }
        let root = BlockOperation { record.update { $0.append("root") } }
        let leafPositions = leaves.map(position)
        for leaf in leaves { leaf.addDependency(root) }
        // One operation moved for each shape, at most the first edge's other end besides it:
        // the other edges agreed with the order (no reordering under the lock).
        #expect(zip(sources, sourcePositions).filter { position($0) != $1 }.count == 0)
        #expect(zip(leaves, leafPositions).filter { position($0) != $1 }.count <= 1)
        // The sink also waits for the leaves: sources and root first, then leaves, then sink.
        for leaf in leaves { sink.addDependency(leaf) }
        #expect(sources.allSatisfy { position($0) < position(sink) })
        #expect(leaves.allSatisfy { position(root) < position($0) })
        let queue = OperationQueue()
        queue.addOperations([sink, root] + leaves + sources, waitUntilFinished: true)
        let order = record()
        #expect(order.last == "sink")
        let rootIndex = order.firstIndex(of: "root") ?? order.count
        #expect(order.enumerated().allSatisfy { !$0.element.hasPrefix("leaf") || $0.offset > rootIndex })
        #expect(order.count == 102)
    }
}
