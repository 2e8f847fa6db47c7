package injection

// The lexicon and the phrases again, in flat arrays for the scan of
// every tool result. In the serving process the scanner runs with cold
// caches (the proxy sleeps between calls while the machine's other
// processes run), so what a word costs there is the cache lines it
// touches, not its instructions: the map of lexicon entries, the
// strings of lexWords, each entry's phrase starts and each phrase's
// elements were a pointer chase of four to six lines per word of the
// lexicon. Here a word not in the lexicon touches one line of flatSlots
// and a word in it one more (its flatWord, which holds the word's bytes
// to compare, its classes and where its phrase starts are); a phrase's
// elements and their word ids are small contiguous arrays. The pointer
// structures (lexicon, lexEntry.starts, phrase) stay: the full path
// (Scanner.full) uses them, and the differential tests prove that both
// find the same.

// flatWord is what the flat lexicon knows of one word id: 32 bytes, so
// that one cache line holds all of it.
type flatWord struct {
	w       [16]byte // the word (the lexicon's longest has 15 bytes)
	n       uint8    // its length
	startN  uint8    // how many phrases start with it
	classes wordClass
	startA  uint16 // its phrases are flatStarts[startA:startA+startN]
	_       [10]byte
}

// flatPhrase is one phrase: its elements are flatElems[elemA:elemA+elemN].
type flatPhrase struct {
	elemA   uint16
	elemN   uint8
	rule    uint8 // index in phraseRules
	atStart bool
}

// flatElem is one element: its sorted word ids are flatIDs[idA:idA+idN].
type flatElem struct {
	mask uint64 // bit id%64 of every id, as element.mask
	idA  uint16
	idN  uint16
	gap  uint8
}

const (
	flatSlotBits   = 12
	flatSlotMask   = 1<<flatSlotBits - 1
	flatFilterBits = 13
	// flatMaxWord: lookup's bound, longer than any word of the lexicon.
	flatMaxWord = 16
)

var (
	// flatSlots is an open-addressed table of the lexicon's ids by
	// flatHash, about half full: a slot holds id | tag<<16, where the
	// tag is the hash's upper half, so that a word not in the lexicon
	// (most words) is told so by the slots alone.
	flatSlots [1 << flatSlotBits]uint32
	// flatFilter has bit flatFilterBit(h) set for the hash of every word
	// of the lexicon: 1 KiB, 16 lines, that tell about three quarters of
	// the words not in the lexicon so, where each would touch a line of
	// flatSlots of its own.
	flatFilter  [1 << flatFilterBits / 64]uint64
	flatWords   []flatWord
	flatStarts  []uint16 // phrase indices
	flatPhrases []flatPhrase
	flatElems   []flatElem
	flatIDs     []uint16
	// flatNot, flatCan, flatWill, flatShall: ids the tokenizer names.
	flatNot, flatCan, flatWill, flatShall uint16
)

// flatHash is FNV-1a; the tokenizer computes it as it finds a word's
// bytes (flatStep), so the lookup does not read the word again for it.
const flatOffset = 2166136261

func flatStep(h uint32, c byte) uint32 { return (h ^ uint32(c)) * 16777619 }

func flatHash(w []byte) uint32 {
	h := uint32(flatOffset)
	for _, c := range w {
		h = flatStep(h, c)
	}
	return h
}

// buildFlat fills the flat tables from the lexicon (loadLexicon).
func buildFlat() {
	if len(lexicon) > len(flatSlots)*5/8 || len(lexicon) >= 1<<16 {
		panic("injection: the lexicon outgrew its flat table")
	}
	flatWords = make([]flatWord, len(lexByID))
	index := map[*phrase]uint16{}
	for id := 1; id < len(lexByID); id++ {
		e, w := lexByID[id], lexWords[id]
		if len(w) > flatMaxWord-1 {
			panic("injection: a word of the lexicon is too long for the flat table: " + w)
		}
		fw := &flatWords[id]
		copy(fw.w[:], w)
		fw.n, fw.classes = uint8(len(w)), e.classes
		fw.startA, fw.startN = uint16(len(flatStarts)), uint8(len(e.starts))
		if len(e.starts) > 255 {
			panic("injection: too many phrases start with " + w)
		}
		for _, p := range e.starts {
			pi, ok := index[p]
			if !ok {
				pi = uint16(len(flatPhrases))
				index[p] = pi
				fp := flatPhrase{elemA: uint16(len(flatElems)), elemN: uint8(len(p.elems)), atStart: p.atStart,
					rule: uint8(p.rule.index())}
				flatPhrases = append(flatPhrases, fp)
				for _, el := range p.elems {
					flatElems = append(flatElems, flatElem{mask: el.mask, idA: uint16(len(flatIDs)), idN: uint16(len(el.words)), gap: uint8(el.gap)})
					flatIDs = append(flatIDs, el.words...)
				}
			}
			flatStarts = append(flatStarts, pi)
		}
		h := flatHash([]byte(w))
		i := h & flatSlotMask
		for flatSlots[i] != 0 {
			i = (i + 1) & flatSlotMask
		}
		flatSlots[i] = uint32(id) | h&0xffff0000
		f := flatFilterBit(h)
		flatFilter[f/64] |= 1 << (f % 64)
	}
	if len(flatIDs) >= 1<<16 || len(flatElems) >= 1<<16 || len(flatPhrases) >= 1<<16 {
		panic("injection: the phrases outgrew the flat tables")
	}
	flatNot, flatCan, flatWill, flatShall = idOf("not"), idOf("can"), idOf("will"), idOf("shall")
	flatContractionFirst = map[string]uint16{}
	for _, pair := range contractions {
		if pair[1] != "not" {
			panic("injection: a contraction the flat lexicon does not know")
		}
		flatContractionFirst[pair[0]] = idOf(pair[0])
	}
}

// idOf is the id of w, or 0 if the lexicon lacks it.
func idOf(w string) uint16 {
	if e := lexicon[w]; e != nil {
		return e.id
	}
	return 0
}

// index is r's place in phraseRules.
func (r *phraseRule) index() int {
	for i := range phraseRules {
		if &phraseRules[i] == r {
			return i
		}
	}
	panic("injection: a phrase of no rule")
}

// flatFilterBit is the bit of flatFilter for hash h: its bits mixed,
// so that it does not repeat the slot's index.
func flatFilterBit(h uint32) uint32 { return h * 0x9e3779b1 >> (32 - flatFilterBits) }

// flatLookup is the id of w, whose flatHash is h, or 0.
func flatLookup(w []byte, h uint32) uint16 {
	if len(w) == 0 || len(w) >= flatMaxWord {
		return 0
	}
	if f := flatFilterBit(h); flatFilter[f/64]&(1<<(f%64)) == 0 {
		return 0
	}
	tag := h & 0xffff0000
	for i := h & flatSlotMask; ; i = (i + 1) & flatSlotMask {
		s := flatSlots[i]
		if s == 0 {
			return 0
		}
		if s&0xffff0000 != tag {
			continue
		}
		id := uint16(s)
		fw := &flatWords[id]
		if int(fw.n) == len(w) && string(fw.w[:len(w)]) == string(w) {
			return id
		}
	}
}

// has reports whether the element holds id.
func (e *flatElem) has(id uint16) bool {
	if e.mask&(1<<(id%64)) == 0 {
		return false
	}
	ids := flatIDs[e.idA : e.idA+e.idN]
	lo, hi := 0, len(ids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(ids) && ids[lo] == id
}

// flatMatch reports whether the elements els[e:] match the words from t
// on, and the index past the last word: phrase.match on the flat arrays.
func flatMatch(els []flatElem, words []word, e, t int) (int, bool) {
	if e == len(els) {
		return t, true
	}
	el := &els[e]
	for k := 0; k <= int(el.gap) && t+k < len(words); k++ {
		if el.has(words[t+k].id) {
			if end, ok := flatMatch(els, words, e+1, t+k+1); ok {
				return end, true
			}
		}
	}
	return 0, false
}

// matchPhrasesFlat is matchPhrases on the flat arrays. A phrase starts
// with the word that lists it, so its first element is not tried again.
func (st *state) matchPhrasesFlat() {
	words := st.words
	for t := range words {
		w := &words[t]
		if int(w.a) >= st.report {
			break
		}
		if w.id == 0 {
			continue
		}
		fw := &flatWords[w.id]
		for _, pi := range flatStarts[fw.startA : fw.startA+uint16(fw.startN)] {
			p := &flatPhrases[pi]
			if p.atStart && !w.start {
				continue
			}
			end, ok := flatMatch(flatElems[p.elemA:p.elemA+uint16(p.elemN)], words, 1, t+1)
			r := &phraseRules[p.rule]
			if !ok || st.matchedBefore(r, t, end) {
				continue
			}
			st.phraseFinding(r, t, end)
		}
	}
}
