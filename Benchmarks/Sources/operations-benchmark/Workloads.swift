import Foundation
import Synchronization

/// Counts from many threads with one atomic add.
final class AtomicCounter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .acquiring) }
}

/// The workloads, each timed (nanoseconds from first add to the end of the wait) and
/// checking its own result.
enum Workloads<Q: QueueAPI> {
    static func tiny(_ n: Int) throws -> UInt64 {
        let queue = Q(), counter = AtomicCounter()
        let start = now()
        for _ in 0..<n { queue.addBlock { counter.increment() } }
        queue.waitAll()
        let elapsed = now() - start
        try check(counter.value == n, "\(Q.name) tiny: \(counter.value) of \(n) ran")
        return elapsed
    }

    static func tinyBlockOperations(_ n: Int) throws -> UInt64 {
        let queue = Q(), counter = AtomicCounter()
        let start = now()
        let operations = (0..<n).map { _ in Q.make { counter.increment() } }
        queue.add(operations, waitUntilFinished: true)
        let elapsed = now() - start
        try check(counter.value == n, "\(Q.name) tiny-blockop: \(counter.value) of \(n) ran")
        return elapsed
    }

    static func serial(_ n: Int) throws -> UInt64 {
        let queue = Q(), recorder = Recorder(capacity: n)
        queue.maxConcurrentOperationCount = 1
        let start = now()
        for index in 0..<n { queue.addBlock { recorder.record(index) } }
        queue.waitAll()
        let elapsed = now() - start
        try check(recorder.all == Array(0..<n), "\(Q.name) serial: not FIFO")
        return elapsed
    }

    static func chain(_ n: Int) throws -> UInt64 {
        let queue = Q(), recorder = Recorder(capacity: n)
        let start = now()
        let operations = (0..<n).map { index in Q.make { recorder.record(index) } }
        for index in 1..<n { operations[index].addDependency(on: operations[index - 1]) }
        queue.add(operations, waitUntilFinished: false)
        queue.waitAll()
        let elapsed = now() - start
        try check(recorder.all == Array(0..<n), "\(Q.name) chain: dependency order broken")
        return elapsed
    }

    static func fanIn(_ n: Int) throws -> UInt64 {
        let queue = Q(), recorder = Recorder(capacity: n + 1)
        let start = now()
        let sink = Q.make { recorder.record(-1) }
        let sources = (0..<n).map { index in Q.make { recorder.record(index) } }
        for source in sources { sink.addDependency(on: source) }
        queue.add([sink] + sources, waitUntilFinished: false)
        queue.waitAll()
        let elapsed = now() - start
        let all = recorder.all
        try check(all.count == n + 1 && all.last == -1, "\(Q.name) fanin: sink did not run last")
        return elapsed
    }

    static func fanOut(_ n: Int) throws -> UInt64 {
        let queue = Q(), recorder = Recorder(capacity: n + 1)
        let start = now()
        let root = Q.make { recorder.record(-1) }
        let leaves = (0..<n).map { index in Q.make { recorder.record(index) } }
        for leaf in leaves { leaf.addDependency(on: root) }
        queue.add(leaves, waitUntilFinished: false)
        queue.add([root], waitUntilFinished: false)
        queue.waitAll()
        let elapsed = now() - start
        let all = recorder.all
        try check(all.count == n + 1 && all.first == -1, "\(Q.name) fanout: root did not run first")
        return elapsed
    }

    /// `n` operations in layers of `width`, each depending on every operation of the
    /// layer before.
    static func diamond(_ n: Int, width: Int = 16) throws -> UInt64 {
        let queue = Q(), layers = n / width, recorder = Recorder(capacity: n)
        let start = now()
        var previous: [Q.Op] = []
        var all: [Q.Op] = []
        for layer in 0..<layers {
            let current = (0..<width).map { _ in Q.make { recorder.record(layer) } }
            for operation in current { for before in previous { operation.addDependency(on: before) } }
            all += current
            previous = current
        }
        queue.add(all, waitUntilFinished: false)
        queue.waitAll()
        let elapsed = now() - start
        let order = recorder.all
        try check(order.count == layers * width && order == order.sorted(), "\(Q.name) diamond: layer order broken")
        return elapsed
    }

    static func cancel(_ n: Int) throws -> UInt64 {
        let queue = Q(), counter = AtomicCounter()
        queue.isSuspended = true
        let start = now()
        for _ in 0..<n { queue.addBlock { counter.increment() } }
        queue.cancelAll()
        queue.isSuspended = false
        queue.waitAll()
        let elapsed = now() - start
        try check(counter.value == 0, "\(Q.name) cancel: \(counter.value) cancelled operations ran")
        return elapsed
    }

    static func priority(_ n: Int) throws -> UInt64 {
        let queue = Q(), recorder = Recorder(capacity: n)
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let priorities = [-8, -4, 0, 4, 8]
        let start = now()
        let operations = (0..<n).map { index in
            let operation = Q.make { recorder.record(index) }
            operation.setPriority(priorities[index % 5])
            return operation
        }
        queue.add(operations, waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitAll()
        let elapsed = now() - start
        let expected = (0..<n).sorted { a, b in
            let (pa, pb) = (priorities[a % 5], priorities[b % 5])
            return pa != pb ? pa > pb : a < b
        }
        try check(recorder.all == expected, "\(Q.name) priority: wrong order")
        return elapsed
    }

    /// `n` operations wait in a suspended serial queue; every other one is raised, newest
    /// first (a list scrolled upwards), then they run. Timed from the first change.
    static func reprioritise(_ n: Int) throws -> UInt64 {
        let queue = Q(), recorder = Recorder(capacity: n)
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let operations = (0..<n).map { index in Q.make { recorder.record(index) } }
        queue.add(operations, waitUntilFinished: false)
        let start = now()
        for index in stride(from: n - 1, through: 0, by: -1) where index % 2 == 1 {
            operations[index].setPriority(4)
        }
        queue.isSuspended = false
        queue.waitAll()
        let elapsed = now() - start
        let expected = Array(stride(from: 1, to: n, by: 2)) + Array(stride(from: 0, to: n, by: 2))
        // Linux's Foundation runs them in another order (seen): only that all ran.
        let order = Q.name == OursQueue.name ? recorder.all : recorder.all.sorted()
        try check(order == (Q.name == OursQueue.name ? expected : Array(0..<n)), "\(Q.name) reprioritise: wrong order")
        return elapsed
    }

    static func contendedAdd(_ n: Int) throws -> UInt64 {
        let queue = Q(), counter = AtomicCounter()
        let start = now()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<(n / 2) { queue.addBlock { counter.increment() } }
        }
        queue.waitAll()
        let elapsed = now() - start
        try check(counter.value == n / 2 * 2, "\(Q.name) contended: \(counter.value) ran")
        return elapsed
    }

    /// Bytes per pending operation: the growth of resident memory while `n`
    /// BlockOperations wait in a suspended queue. Run alone in a child process.
    static func pendingMemory(_ n: Int) -> Double {
        let queue = Q()
        queue.isSuspended = true
        queue.addBlock {}  // warm up the queue's own structures
        let before = residentBytes()
        for _ in 0..<n { queue.add([Q.make {}], waitUntilFinished: false) }
        let after = residentBytes()
        queue.cancelAll()
        queue.isSuspended = false
        queue.waitAll()
        return Double(after - before) / Double(n)
    }
}

/// Raw Dispatch equivalents.
enum DispatchWorkloads {
    static func tiny(_ n: Int) throws -> UInt64 {
        let group = DispatchGroup(), counter = AtomicCounter(), queue = DispatchQueue.global()
        let start = now()
        for _ in 0..<n { queue.async(group: group) { counter.increment() } }
        group.wait()
        let elapsed = now() - start
        try check(counter.value == n, "Dispatch tiny: \(counter.value) of \(n)")
        return elapsed
    }

    static func serial(_ n: Int) throws -> UInt64 {
        let group = DispatchGroup(), recorder = Recorder(capacity: n), queue = DispatchQueue(label: "serial")
        let start = now()
        for index in 0..<n { queue.async(group: group) { recorder.record(index) } }
        group.wait()
        let elapsed = now() - start
        try check(recorder.all == Array(0..<n), "Dispatch serial: not FIFO")
        return elapsed
    }

    /// `n` blocks in a group, and one that runs once they all ran (`notify`).
    static func fanIn(_ n: Int) throws -> UInt64 {
        let group = DispatchGroup(), recorder = Recorder(capacity: n + 1), queue = DispatchQueue.global()
        let done = DispatchSemaphore(value: 0)
        let start = now()
        for index in 0..<n { queue.async(group: group) { recorder.record(index) } }
        group.notify(queue: queue) {
            recorder.record(-1)
            done.signal()
        }
        done.wait()
        let elapsed = now() - start
        let all = recorder.all
        try check(all.count == n + 1 && all.last == -1, "Dispatch fanin: sink did not run last")
        return elapsed
    }

    /// One work item, and `n` blocks that each run once it ran (`notify`).
    static func fanOut(_ n: Int) throws -> UInt64 {
        let group = DispatchGroup(), recorder = Recorder(capacity: n + 1), queue = DispatchQueue.global()
        let start = now()
        let root = DispatchWorkItem { recorder.record(-1) }
        for index in 0..<n {
            group.enter()
            root.notify(queue: queue) {
                recorder.record(index)
                group.leave()
            }
        }
        queue.async(execute: root)
        group.wait()
        let elapsed = now() - start
        let all = recorder.all
        try check(all.count == n + 1 && all.first == -1, "Dispatch fanout: root did not run first")
        return elapsed
    }

    static func cancel(_ n: Int) throws -> UInt64 {
        let group = DispatchGroup(), counter = AtomicCounter()
        let queue = DispatchQueue(label: "cancel", attributes: .concurrent)
        queue.suspend()
        let start = now()
        var items: [DispatchWorkItem] = []
        items.reserveCapacity(n)
        for _ in 0..<n {
            let item = DispatchWorkItem { counter.increment() }
            items.append(item)
            queue.async(group: group, execute: item)
        }
        for item in items { item.cancel() }
        queue.resume()
        group.wait()
        let elapsed = now() - start
        try check(counter.value == 0, "Dispatch cancel: \(counter.value) ran")
        return elapsed
    }

    static func contendedAdd(_ n: Int) throws -> UInt64 {
        let group = DispatchGroup(), counter = AtomicCounter(), queue = DispatchQueue.global()
        let start = now()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<(n / 2) { queue.async(group: group) { counter.increment() } }
        }
        group.wait()
        let elapsed = now() - start
        try check(counter.value == n / 2 * 2, "Dispatch contended: \(counter.value)")
        return elapsed
    }
}
