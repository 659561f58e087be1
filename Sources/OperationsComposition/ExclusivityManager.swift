// Process-wide mutual exclusion by category: the pure state and the storage holding it.

@_spi(Engine) import Operations

/// The holders and waiters of every category, process-wide. A pure state machine: its
/// events return the passes to admit, which the caller admits after the lock.
///
/// Each category has its own line of waiting requests, in the order they came; a request is
/// granted when it is first in the line of every category it names and all of them are free
/// for its mode. Lines follow the one order of arrival, so two requests never wait for each
/// other; a release looks only at the lines of the categories it frees: 64 categories cost
/// no more per request than one.
///
/// A request whose turn comes while its operation may not take anything (`MayTake`: its
/// queue is suspended) is deferred: passed over, it keeps its place in its lines, and the
/// requests behind it are looked at as if it were not there, until `resume` lets it back.
struct ExclusivityState {
    /// Whether the request (its id and pass) may take its categories now; when it may not,
    /// the caller arranges for `resume(_:mayTake:)` to be called once it may.
    typealias MayTake = (_ id: UInt64, _ pass: GatePass) -> Bool

    struct Holding {
        var exclusive = false
        var count = 0
    }

    /// One category named by a request: its slot in `categories`, and the mode asked for.
    struct Need {
        var slot: Int
        var mode: ExclusivityMode
    }

    struct Request {
        /// One entry per category, in the order of their names (exclusive wins over shared).
        var needs: [Need]
        var grant: GatePass
        var isGranted = false
        /// Made from inside a group (or retry) that holds categories: granted as soon as
        /// its categories are free, not behind the lines, whose earlier requests may be
        /// waiting for that very group (which waits for this one).
        var insideHolder = false
        /// Its turn came while it could not take anything: passed over until resumed.
        var isDeferred = false
    }

    /// The ids waiting in one category, first from `head` on; ids no longer waiting (left)
    /// are skipped when they come first, so that taking the first costs O(1).
    struct Line {
        var ids: [UInt64] = []
        var head = 0

        var isEmpty: Bool { head == ids.count }

        mutating func compact() {
            if head > 32, head * 2 > ids.count {
                ids.removeFirst(head)
                head = 0
            }
        }
    }

    /// A category while requests name it: its name is hashed once per request, then the
    /// state works on slots.
    struct Category {
        var name: String
        var holding = Holding()
        var line = Line()
        /// Inside-holder requests waiting for it (they wait in no line).
        var insideHolders: [UInt64] = []
        /// How many requests (waiting or granted) name it; at zero the slot is freed.
        var references = 0
    }

    /// Requests waiting or granted, until released, in a table whose entries are reused.
    /// An id is the request's sequence number (upper bits) and its entry (lower bits): an
    /// id left behind in a line by a request that left matches no entry any more.
    private var requests: [(id: UInt64, request: Request)?] = []
    private var freeEntries: [Int] = []
    private var sequence: UInt64 = 0
    private static let entryBits: UInt64 = 24

    private var slots: [String: Int] = [:]
    private var categories: [Category] = []
    private var freeSlots: [Int] = []

    /// Who holds each category now, by name.
    var holdings: [String: Holding] {
        Dictionary(uniqueKeysWithValues: slots.compactMap { name, slot in
            categories[slot].holding.count > 0 ? (name, categories[slot].holding) : nil
        })
    }

    /// What the waiting request `id` waits for (none when it was granted or left): the
    /// operations holding a category it needs, and those whose requests wait ahead of it in
    /// a line it is in (not deferred: they take the category first). Reads every request
    /// and those lines: for the wait graph, not the hot path.
    func holders(blocking id: UInt64) -> [Operation] {
        guard let waiting = lookUp(id), !waiting.isGranted else { return [] }
        let needed = Set(waiting.needs.map(\.slot))
        var blocking = requests.compactMap { entry -> Operation? in
            guard let (otherID, other) = entry, otherID != id, other.isGranted,
                other.needs.contains(where: { needed.contains($0.slot) })
            else { return nil }
            return other.grant.operation
        }
        for slot in needed {
            let line = categories[slot].line
            for ahead in line.ids[line.head...] {
                if ahead == id { break }
                if let request = lookUp(ahead), !request.isGranted, !request.isDeferred {
                    blocking.append(request.grant.operation)
                }
            }
        }
        return blocking
    }

    /// The ids of the requests not granted yet.
    var waiting: [UInt64] { requests.compactMap { $0.flatMap { $0.request.isGranted ? nil : $0.id } } }

    /// The request with this id, while it is waiting or granted.
    private func lookUp(_ id: UInt64) -> Request? {
        let entry = Int(truncatingIfNeeded: id & (1 << Self.entryBits - 1))
        guard entry < requests.count, let stored = requests[entry], stored.id == id else { return nil }
        return stored.request
    }

    private mutating func store(_ request: Request, as id: UInt64) {
        requests[Int(truncatingIfNeeded: id & (1 << Self.entryBits - 1))] = (id, request)
    }

    /// A new id, with an entry for it.
    private mutating func newID() -> UInt64 {
        let entry: Int
        if let free = freeEntries.popLast() {
            entry = free
        } else {
            entry = requests.count
            precondition(
                UInt64(entry) < 1 << Self.entryBits,
                "addExclusivity: more than \(1 << Self.entryBits) operations wait for or hold categories at once")
            requests.append(nil)
        }
        sequence &+= 1
        return sequence << Self.entryBits | UInt64(entry)
    }

    /// A request arrives; returns its id and the passes granted now (its own, if it is).
    mutating func request(
        _ needs: [(category: String, mode: ExclusivityMode)], pass: GatePass, insideHolder: Bool = false,
        mayTake: MayTake = { _, _ in true }
    ) -> (UInt64, [GatePass]) {
        let id = newID()
        var request = Request(needs: needs.map { Need(slot: slot(for: $0.category), mode: $0.mode) }, grant: pass, insideHolder: insideHolder)
        // Granted at once when nothing waits before it (but deferred requests) and its
        // categories are free.
        var first = true
        if !insideHolder {
            for need in request.needs where firstEligible(in: need.slot) != nil { first = false }
        }
        if first, isFree(request) {
            if mayTake(id, pass) {
                take(&request)
                store(request, as: id)
                return (id, [pass])
            }
            request.isDeferred = true
        }
        for need in request.needs {
            if insideHolder {
                categories[need.slot].insideHolders.append(id)
            } else {
                categories[need.slot].line.ids.append(id)
            }
        }
        store(request, as: id)
        return (id, [])
    }

    /// A request leaves: granted ones give their categories back, waiting ones leave their
    /// lines. Returns the passes granted as a result.
    mutating func release(_ id: UInt64, mayTake: MayTake = { _, _ in true }) -> [GatePass] {
        guard let request = lookUp(id) else { return [] }
        let entry = Int(truncatingIfNeeded: id & (1 << Self.entryBits - 1))
        requests[entry] = nil
        freeEntries.append(entry)
        if request.isGranted {
            for need in request.needs { categories[need.slot].holding.count -= 1 }
        } else if request.insideHolder {
            // Its ids in the lines stay, skipped when they come first.
            for need in request.needs { categories[need.slot].insideHolders.removeAll { $0 == id } }
        }
        let passes = grant(after: request.needs, mayTake: mayTake)
        for need in request.needs { unreference(need.slot) }
        return passes
    }

    /// A deferred request may take its categories again: in its place in line (it came
    /// before the requests that arrived since). Returns the passes granted as a result.
    mutating func resume(_ id: UInt64, mayTake: MayTake = { _, _ in true }) -> [GatePass] {
        guard var request = lookUp(id), request.isDeferred else { return [] }
        request.isDeferred = false
        store(request, as: id)
        return grant(after: request.needs, mayTake: mayTake)
    }

    /// The slot of `name`, made when no request names it; counts one more reference.
    private mutating func slot(for name: String) -> Int {
        if let slot = slots[name] {
            categories[slot].references += 1
            return slot
        }
        let category = Category(name: name, references: 1)
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            categories[slot] = category
        } else {
            slot = categories.count
            categories.append(category)
        }
        slots[name] = slot
        return slot
    }

    private mutating func unreference(_ slot: Int) {
        categories[slot].references -= 1
        guard categories[slot].references == 0 else { return }
        slots[categories[slot].name] = nil
        categories[slot] = Category(name: "")
        freeSlots.append(slot)
    }

    /// Whether every category of `request` is free for its mode.
    private func isFree(_ request: Request) -> Bool {
        request.needs.allSatisfy { need in
            let holding = categories[need.slot].holding
            return holding.count == 0 || (need.mode == .shared && !holding.exclusive)
        }
    }

    private mutating func take(_ request: inout Request) {
        for need in request.needs {
            categories[need.slot].holding.exclusive = need.mode == .exclusive
            categories[need.slot].holding.count += 1
        }
        request.isGranted = true
    }

    /// The first waiting id of the category's line that is not deferred, dropping the ids
    /// at the head that no longer wait (left or granted). Ids behind a deferred request
    /// that no longer wait are skipped, and dropped once they reach the head.
    private mutating func firstEligible(in slot: Int) -> UInt64? {
        while !categories[slot].line.isEmpty {
            let id = categories[slot].line.ids[categories[slot].line.head]
            if let request = lookUp(id), !request.isGranted { break }
            categories[slot].line.head += 1
        }
        categories[slot].line.compact()
        let line = categories[slot].line
        for position in line.head..<line.ids.count {
            let id = line.ids[position]
            if let request = lookUp(id), !request.isGranted, !request.isDeferred { return id }
        }
        return nil
    }

    /// Grants what freeing `needs`' categories allows: in each line, the first requests
    /// that are first in all their lines and free; a grant moves other lines, which are
    /// looked at in turn, and so does a request deferred because it may not take now.
    private mutating func grant(after needs: [Need], mayTake: MayTake) -> [GatePass] {
        var passes: [GatePass] = []
        // Lines a grant moved (made only when a request names several categories).
        var moved: [Int] = []
        var unvisited = needs.count
        while true {
            let slot: Int
            if let next = moved.popLast() {
                slot = next
            } else if unvisited > 0 {
                unvisited -= 1
                slot = needs[unvisited].slot
            } else {
                break
            }
            for id in categories[slot].insideHolders {
                guard var request = lookUp(id), !request.isGranted, !request.isDeferred, isFree(request) else { continue }
                guard mayTake(id, request.grant) else {
                    request.isDeferred = true
                    store(request, as: id)
                    continue
                }
                for need in request.needs { categories[need.slot].insideHolders.removeAll { $0 == id } }
                take(&request)
                store(request, as: id)
                passes.append(request.grant)
            }
            while let id = firstEligible(in: slot), var request = lookUp(id),
                request.needs.allSatisfy({ firstEligible(in: $0.slot) == id }), isFree(request)
            {
                // Granted or passed over, it no longer stands before the others in its lines.
                for need in request.needs where need.slot != slot { moved.append(need.slot) }
                if mayTake(id, request.grant) {
                    take(&request)
                    passes.append(request.grant)
                } else {
                    request.isDeferred = true
                }
                store(request, as: id)
            }
        }
        return passes
    }
}

/// The one exclusivity state of the process.
enum ExclusivityManager {
    static let state = Locked(ExclusivityState())

    /// Asks for every category in `needs` (keyed by scope: a category inside a group is a
    /// key of its own; sorted); returns the request's id and the passes granted now, to
    /// admit after the lock (its own, if it is granted at once).
    static func request(
        _ needs: [(category: String, mode: ExclusivityMode)], insideHolder: Bool, grant: GatePass
    ) -> (UInt64, [GatePass]) {
        state.withLock { $0.request(needs, pass: grant, insideHolder: insideHolder, mayTake: mayTakeNow) }
    }

    /// Gives a request's categories back (or takes it out of the line) and admits the
    /// requests that are granted as a result.
    static func release(_ id: UInt64) {
        let granted = state.withLock { $0.release(id, mayTake: mayTakeNow) }
        for grant in granted { grant.admit() }
    }

    /// A deferred request's queue resumed: it may be granted, in its place in line.
    private static func resume(_ id: UInt64) {
        let granted = state.withLock { $0.resume(id, mayTake: mayTakeNow) }
        for grant in granted { grant.admit() }
    }

    /// Whether a request may be granted now: not while its operation's queue is suspended,
    /// where it could not start and would hold its categories from operations that can
    /// (it is resumed when the queue resumes). Under the state's lock: the queue's lock is
    /// taken inside it, and nothing holding a queue's or an operation's lock takes this one.
    private static func mayTakeNow(_ id: UInt64, _ pass: GatePass) -> Bool {
        !pass.deferIfQueueSuspended { resume(id) }
    }
}
