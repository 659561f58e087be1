// Process-wide mutual exclusion by category: the pure state and the storage holding it.

import Operations

/// The holders and waiters of every category, process-wide. A pure state machine: its
/// events return the passes to admit, which the caller admits after the lock.
///
/// Each category has its own line of waiting requests, in the order they came; a request is
/// granted when it is first in the line of every category it names and all of them are free
/// for its mode. Lines follow the one order of arrival, so two requests never wait for each
/// other; a release looks only at the lines of the categories it frees: 64 categories cost
/// no more per request than one.
struct ExclusivityState {
    struct Holding {
        var exclusive = false
        var count = 0
    }

    struct Request {
        var id: UInt64
        /// Sorted by category name, one entry per category (exclusive wins over shared).
        var needs: [(category: String, mode: ExclusivityMode)]
        var grant: GatePass
        /// Made from inside a group (or retry) that holds categories: granted as soon as
        /// its categories are free, not behind the lines, whose earlier requests may be
        /// waiting for that very group (which waits for this one).
        var insideHolder = false
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

    var nextID: UInt64 = 0
    var holdings: [String: Holding] = [:]
    /// Requests not granted yet, by id.
    var waiting: [UInt64: Request] = [:]
    /// The line of each category with waiting requests (inside-holder requests wait in none).
    var lines: [String: Line] = [:]
    /// Inside-holder requests waiting, by a category they name.
    var insideHolders: [String: [UInt64]] = [:]
    /// Granted requests, until released.
    var granted: [UInt64: [(category: String, mode: ExclusivityMode)]] = [:]

    /// A request arrives; returns its id and the passes granted now (its own, if it is).
    mutating func request(
        _ needs: [(category: String, mode: ExclusivityMode)], pass: GatePass, insideHolder: Bool = false
    ) -> (UInt64, [GatePass]) {
        nextID += 1
        let id = nextID
        let request = Request(id: id, needs: needs, grant: pass, insideHolder: insideHolder)
        // Granted at once when nothing waits before it and its categories are free.
        var first = true
        if !insideHolder {
            for need in needs where self.first(in: need.category) != nil { first = false }
        }
        if first, isFree(request) {
            take(request)
            return (id, [pass])
        }
        waiting[id] = request
        for need in needs {
            if insideHolder {
                insideHolders[need.category, default: []].append(id)
            } else {
                lines[need.category, default: Line()].ids.append(id)
            }
        }
        return (id, [])
    }

    /// A request leaves: granted ones give their categories back, waiting ones leave their
    /// lines. Returns the passes granted as a result.
    mutating func release(_ id: UInt64) -> [GatePass] {
        let categories: [String]
        if let needs = granted.removeValue(forKey: id) {
            for (category, _) in needs {
                holdings[category]!.count -= 1
                if holdings[category]!.count == 0 { holdings[category] = nil }
            }
            categories = needs.map(\.category)
        } else if let request = waiting.removeValue(forKey: id) {
            // Its ids stay in the lines, skipped when they come first.
            if request.insideHolder {
                for need in request.needs { insideHolders[need.category]?.removeAll { $0 == id } }
            }
            categories = request.needs.map(\.category)
        } else {
            return []
        }
        return grant(startingWith: categories)
    }

    /// Whether every category of `request` is free for its mode.
    private func isFree(_ request: Request) -> Bool {
        request.needs.allSatisfy { need in
            guard let holding = holdings[need.category] else { return true }
            return need.mode == .shared && !holding.exclusive
        }
    }

    private mutating func take(_ request: Request) {
        for need in request.needs {
            var holding = holdings[need.category] ?? Holding()
            holding.exclusive = need.mode == .exclusive
            holding.count += 1
            holdings[need.category] = holding
        }
        granted[request.id] = request.needs
    }

    /// The first waiting id of `category`'s line, dropping ids that left.
    private mutating func first(in category: String) -> UInt64? {
        guard var line = lines[category] else { return nil }
        while !line.isEmpty, waiting[line.ids[line.head]] == nil { line.head += 1 }
        guard !line.isEmpty else {
            lines[category] = nil
            return nil
        }
        line.compact()
        lines[category] = line
        return line.ids[line.head]
    }

    /// Grants what the change in `categories` allows: in each line, the first requests
    /// that are first in all their lines and free; a grant moves other lines, which are
    /// looked at in turn.
    private mutating func grant(startingWith categories: [String]) -> [GatePass] {
        var passes: [GatePass] = []
        var pending = categories
        while let category = pending.popLast() {
            for id in insideHolders[category] ?? [] {
                guard let request = waiting[id], isFree(request) else { continue }
                waiting[id] = nil
                for need in request.needs { insideHolders[need.category]?.removeAll { $0 == id } }
                take(request)
                passes.append(request.grant)
            }
            while let id = first(in: category), let request = waiting[id],
                request.needs.allSatisfy({ first(in: $0.category) == id }), isFree(request)
            {
                waiting[id] = nil
                for need in request.needs {
                    lines[need.category]!.head += 1
                    if need.category != category { pending.append(need.category) }
                }
                take(request)
                passes.append(request.grant)
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
        state.withLock { $0.request(needs, pass: grant, insideHolder: insideHolder) }
    }

    /// Gives a request's categories back (or takes it out of the line) and admits the
    /// requests that are granted as a result.
    static func release(_ id: UInt64) {
        let granted = state.withLock { $0.release(id) }
        for grant in granted { grant.admit() }
    }
}
