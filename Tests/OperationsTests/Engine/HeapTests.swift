@testable import Operations
import Testing

/// The binary heap of the ready list, against a sorted array.
@Suite("Heap: the ready list's binary heap")
struct HeapTests {
    /// A key, and a number that tells equal keys apart (the order among them is strict).
    struct Entry: HeapElement, Equatable, Sendable {
        let key: Int
        let id: Int

        func goesBefore(_ other: Entry) -> Bool { key != other.key ? key < other.key : id < other.id }
    }

    @Test("inserts, pops and removals from anywhere keep the heap's first the least element")
    func matchesASortedArray() async {
        // On a thread of its own, one expectation at the end, and shorter under a sanitizer.
        // There (a debug build) every call of the heap from this module looks its generic
        // type up in the runtime's cache, which the ready lists of every queue in the process
        // share: 12,000 steps held all of the suite's queues back for two minutes.
        let (seeds, steps): (UInt64, Int) = isSanitized ? (1, 500) : (4, 3_000)
        let mismatches = await onOwnThread { () -> [String] in
            var mismatches: [String] = []
            for seed: UInt64 in 1...seeds { mismatches += Self.run(seed: seed, steps: steps) }
            return mismatches
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5).joined(separator: "\n"))")
    }

    /// Random steps on a heap and on a sorted array; where they disagree.
    static func run(seed: UInt64, steps: Int) -> [String] {
        var random = SplitMix64(seed: seed)
        var heap = Heap<Entry>()
        var model: [Entry] = []
        var mismatches: [String] = []
        func check(_ condition: Bool, _ what: @autoclosure () -> String) {
            if !condition { mismatches.append("seed \(seed): \(what())") }
        }
        for id in 0..<steps {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let entry = Entry(key: Int.random(in: 0..<50, using: &random), id: id)
                heap.insert(entry)
                model.insert(entry, at: model.firstIndex { entry.goesBefore($0) } ?? model.count)
            case 5..<8:
                let popped = heap.popFirst()
                check(popped == model.first, "step \(id): popped \(String(describing: popped)), expected \(String(describing: model.first))")
                if !model.isEmpty { model.removeFirst() }
            default:
                guard let target = model.randomElement(using: &random) else { continue }
                let removed = heap.remove { $0 == target }
                check(removed == target, "step \(id): removed \(String(describing: removed)), expected \(target)")
                model.removeAll { $0 == target }
            }
            check(heap.count == model.count, "step \(id): \(heap.count) elements, expected \(model.count)")
            check(heap.first == model.first, "step \(id): first \(String(describing: heap.first)), expected \(String(describing: model.first))")
        }
        let rest = heap.takeAll().sorted { $0.goesBefore($1) }
        check(rest == model, "the elements left differ")
        check(heap.isEmpty, "not empty after takeAll")
        return mismatches
    }
}
