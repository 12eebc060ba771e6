import NatBasics.Defs
import NatBasics.Add
import NatBasics.Mul
import NatBasics.Order
