@testable import Operations
import Testing

/// The binary heap of the ready list, against a sorted array.
@Suite("Heap: the ready list's binary heap")
struct HeapTests {
    /// A key, and a number that tells equal keys apart (the order among them is strict).
    struct Entry: HeapElement, Equatable {
        let key: Int
        let id: Int

        func goesBefore(_ other: Entry) -> Bool { key != other.key ? key < other.key : id < other.id }
    }

    @Test("inserts, pops and removals from anywhere keep the heap's first the least element", arguments: [1, 2, 3, 4])
    func matchesASortedArray(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var heap = Heap<Entry>()
        var model: [Entry] = []
        for id in 0..<3_000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let entry = Entry(key: Int.random(in: 0..<50, using: &random), id: id)
                heap.insert(entry)
                model.append(entry)
            case 5..<8:
                let popped = heap.popFirst()
                let least = model.min { $0.goesBefore($1) }
                #expect(popped == least)
                if let least { model.removeAll { $0 == least } }
            default:
                guard let target = model.randomElement(using: &random) else { continue }
                #expect(heap.remove { $0 == target } == target)
                model.removeAll { $0 == target }
            }
            #expect(heap.count == model.count)
            #expect(heap.first == model.min { $0.goesBefore($1) })
        }
        let rest = heap.takeAll().sorted { $0.goesBefore($1) }
        #expect(rest == model.sorted { $0.goesBefore($1) })
        #expect(heap.isEmpty)
    }
}
