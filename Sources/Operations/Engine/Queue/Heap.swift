/// What a ``Heap`` holds: an order in which one element comes before another.
protocol HeapElement {
    /// Whether `self` leaves the heap before `other`: a strict order (never both ways, never
    /// an element before itself).
    func goesBefore(_ other: Self) -> Bool

    /// The element now sits at `index` of the heap (an element that must be found again
    /// keeps it).
    func placed(at index: Int)
}

extension HeapElement {
    func placed(at index: Int) {}
}

/// A binary min-heap by ``HeapElement/goesBefore(_:)``: O(log n) to insert, to take the
/// first and to remove the element at a known index (each element is told its index,
/// ``HeapElement/placed(at:)``); O(n) to find one.
struct Heap<Element: HeapElement> {
    private var elements: [Element] = []

    var isEmpty: Bool { elements.isEmpty }
    var count: Int { elements.count }
    var first: Element? { elements.first }

    mutating func insert(_ element: Element) {
        elements.append(element)
        element.placed(at: elements.count - 1)
        siftUp(elements.count - 1)
    }

    /// Whether the element at `index` exists and satisfies `matches`.
    func holds(at index: Int, where matches: (Element) -> Bool) -> Bool {
        index < elements.count && matches(elements[index])
    }

    mutating func popFirst() -> Element? {
        guard !elements.isEmpty else { return nil }
        return remove(at: 0)
    }

    /// Removes the first element (in storage order) for which `matches` holds; nil when
    /// none does.
    mutating func remove(where matches: (Element) -> Bool) -> Element? {
        guard let index = elements.firstIndex(where: matches) else { return nil }
        return remove(at: index)
    }

    /// Empties the heap, returning what it held (in no particular order).
    mutating func takeAll() -> [Element] {
        defer { elements = [] }
        return elements
    }

    /// Removes the element at `index`.
    mutating func remove(at index: Int) -> Element {
        swapAt(index, elements.count - 1)
        let element = elements.removeLast()
        if index < elements.count {
            siftDown(index)
            siftUp(index)
        }
        return element
    }

    private mutating func siftUp(_ start: Int) {
        var index = start
        while index > 0 {
            let parent = (index - 1) / 2
            guard elements[index].goesBefore(elements[parent]) else { return }
            swapAt(index, parent)
            index = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var index = start
        while true {
            let left = 2 * index + 1
            guard left < elements.count else { return }
            let right = left + 1
            let child = right < elements.count && elements[right].goesBefore(elements[left]) ? right : left
            guard elements[child].goesBefore(elements[index]) else { return }
            swapAt(index, child)
            index = child
        }
    }

    private mutating func swapAt(_ first: Int, _ second: Int) {
        guard first != second else { return }
        elements.swapAt(first, second)
        elements[first].placed(at: first)
        elements[second].placed(at: second)
    }
}
