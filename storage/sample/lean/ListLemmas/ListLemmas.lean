import ListLemmas.Basic
import ListLemmas.Append
import ListLemmas.Map
import ListLemmas.Reverse
