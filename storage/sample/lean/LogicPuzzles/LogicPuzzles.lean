import LogicPuzzles.Props
import LogicPuzzles.Quantifiers
import LogicPuzzles.Knights
import LogicPuzzles.Arith
