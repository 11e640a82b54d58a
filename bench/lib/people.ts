/**
 * Material for realistic synthetic contacts: person names from many regions (a WhatsApp gateway's
 * address book is international) and mobile numbering plans that libphonenumber-js accepts as
 * possible E.164 numbers. The seeding SQL combines them deterministically, row by row.
 */

export const FIRST_NAMES: readonly string[] = [
  // Indonesia, Malaysia
  'Budi', 'Siti', 'Agus', 'Dewi', 'Putri', 'Rizky', 'Ayu', 'Wahyu', 'Indah', 'Fajar', 'Sri', 'Eko', 'Rina', 'Dedi',
  'Yusuf', 'Nurul', 'Hendra', 'Fitri', 'Bayu', 'Lestari', 'Adi', 'Wulan', 'Teguh', 'Ratna', 'Joko', 'Mega', 'Rudi',
  'Intan', 'Arif', 'Novi', 'Yogi', 'Kartika', 'Bambang', 'Sari', 'Irfan', 'Dian', 'Taufik', 'Maya', 'Gilang', 'Anisa',
  'Hafiz', 'Aisyah', 'Farhan', 'Nabila', 'Reza', 'Citra', 'Andi', 'Melati',
  // English-speaking countries
  'James', 'Mary', 'John', 'Patricia', 'Robert', 'Jennifer', 'Michael', 'Linda', 'William', 'Elizabeth', 'David',
  'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Charles', 'Karen', 'Daniel', 'Nancy',
  'Matthew', 'Emily', 'Anthony', 'Olivia', 'Mark', 'Emma', 'Steven', 'Chloe', 'Andrew', 'Grace', 'Joshua', 'Hannah',
  'Kevin', 'Lucy', 'Brian', 'Megan', 'George', 'Amelia',
  // Spanish- and Portuguese-speaking countries
  'José', 'María', 'Juan', 'Lucía', 'Carlos', 'Sofía', 'Luis', 'Valentina', 'Miguel', 'Camila', 'Javier', 'Isabella',
  'Alejandro', 'Gabriela', 'Diego', 'Fernanda', 'Pedro', 'Ana', 'Rafael', 'Beatriz', 'Mateus', 'Larissa', 'Thiago',
  'Juliana', 'Gustavo', 'Mariana', 'Rodrigo', 'Carolina', 'Eduardo', 'Paula',
  // South Asia
  'Aarav', 'Priya', 'Rahul', 'Ananya', 'Arjun', 'Deepika', 'Vikram', 'Kavya', 'Rohan', 'Sneha', 'Amit', 'Pooja',
  'Sanjay', 'Lakshmi', 'Rajesh', 'Neha', 'Suresh', 'Divya', 'Imran', 'Ayesha', 'Karan', 'Meera', 'Nikhil', 'Shreya',
  // Arabic-speaking countries, Turkey, Iran
  'Mohammed', 'Fatima', 'Ahmed', 'Mariam', 'Omar', 'Layla', 'Ali', 'Noor', 'Hassan', 'Zainab', 'Khalid', 'Yasmin',
  'Tariq', 'Salma', 'Mehmet', 'Elif', 'Mustafa', 'Zeynep', 'Dariush', 'Shirin', 'Karim', 'Hana',
  // West and East Africa
  'Chinedu', 'Ngozi', 'Emeka', 'Amaka', 'Oluwaseun', 'Folake', 'Tunde', 'Yetunde', 'Kwame', 'Abena', 'Kofi', 'Ama',
  'Babajide', 'Chiamaka', 'Ibrahim', 'Aminata', 'Juma', 'Wanjiru', 'Otieno', 'Achieng',
  // Europe
  'Lukas', 'Anna', 'Jonas', 'Lea', 'Felix', 'Marie', 'Maximilian', 'Laura', 'Pierre', 'Camille', 'Julien', 'Chloé',
  'Antoine', 'Manon', 'Giuseppe', 'Giulia', 'Marco', 'Francesca', 'Luca', 'Chiara', 'Jan', 'Katarzyna', 'Piotr',
  'Agnieszka', 'Ivan', 'Olga', 'Dmitri', 'Natalia', 'Sven', 'Ingrid', 'Lars', 'Astrid', 'Pieter', 'Sanne', 'Nikos',
  'Eleni',
  // East and South-East Asia
  'Wei', 'Mei', 'Jun', 'Xiu', 'Hao', 'Ling', 'Hiroshi', 'Yuki', 'Takeshi', 'Sakura', 'Kenji', 'Aiko', 'Min-jun',
  'Seo-yeon', 'Ji-ho', 'Ha-eun', 'Minh', 'Linh', 'Tuan', 'Thao', 'Somchai', 'Nattaya', 'Jose Mari', 'Maricel',
];

export const LAST_NAMES: readonly string[] = [
  // Indonesia, Malaysia
  'Santoso', 'Wijaya', 'Saputra', 'Hidayat', 'Kusuma', 'Pratama', 'Setiawan', 'Nugroho', 'Siregar', 'Harahap',
  'Nasution', 'Lubis', 'Simanjuntak', 'Wibowo', 'Susanto', 'Halim', 'Gunawan', 'Hartono', 'Purnomo', 'Sutanto',
  'Permana', 'Firmansyah', 'Rahmawati', 'Suryadi', 'Hakim', 'Tanjung', 'Sembiring', 'Ginting', 'Manurung', 'Putra',
  'Rahman', 'Abdullah', 'Ismail', 'Othman', 'Aziz',
  // English-speaking countries
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Miller', 'Davis', 'Wilson', 'Anderson', 'Taylor', 'Thomas',
  'Moore', 'Jackson', 'Martin', 'Thompson', 'White', 'Harris', 'Clark', 'Lewis', 'Robinson', 'Walker', 'Young',
  'Allen', 'King', 'Wright', 'Scott', 'Green', 'Baker', 'Adams', 'Campbell', 'Evans', 'Turner', 'Collins', 'Murphy',
  'Kelly', 'Hughes', 'Fletcher', 'Palmer',
  // Spanish- and Portuguese-speaking countries
  'García', 'Rodríguez', 'Martínez', 'Hernández', 'López', 'González', 'Pérez', 'Sánchez', 'Ramírez', 'Torres',
  'Flores', 'Rivera', 'Gómez', 'Díaz', 'Morales', 'Ortiz', 'Castillo', 'Vargas', 'Romero', 'Silva', 'Santos',
  'Oliveira', 'Souza', 'Pereira', 'Costa', 'Carvalho', 'Almeida', 'Ferreira', 'Ribeiro', 'Barbosa',
  // South Asia
  'Sharma', 'Patel', 'Singh', 'Kumar', 'Gupta', 'Reddy', 'Iyer', 'Nair', 'Mehta', 'Joshi', 'Chopra', 'Desai',
  'Rao', 'Verma', 'Banerjee', 'Chatterjee', 'Malhotra', 'Kapoor', 'Khan', 'Hussain', 'Chaudhry', 'Siddiqui',
  // Arabic-speaking countries, Turkey, Iran
  'Al-Sayed', 'Haddad', 'Nasser', 'Khalil', 'Mansour', 'Saleh', 'Hamdan', 'Farouk', 'Yilmaz', 'Kaya', 'Demir',
  'Şahin', 'Çelik', 'Hosseini', 'Ahmadi', 'Karimi', 'Mohammadi', 'Rezaei',
  // West and East Africa
  'Okafor', 'Adeyemi', 'Okonkwo', 'Balogun', 'Eze', 'Nwosu', 'Adebayo', 'Ogunleye', 'Mensah', 'Asante', 'Boateng',
  'Owusu', 'Diallo', 'Traoré', 'Kamau', 'Mwangi', 'Ochieng', 'Njoroge', 'Mutua', 'Abubakar',
  // Europe
  'Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Meyer', 'Wagner', 'Becker', 'Hoffmann', 'Schulz', 'Dubois',
  'Moreau', 'Laurent', 'Lefebvre', 'Fontaine', 'Rossi', 'Russo', 'Ferrari', 'Esposito', 'Bianchi', 'Romano',
  'Kowalski', 'Nowak', 'Wiśniewski', 'Ivanov', 'Petrov', 'Smirnov', 'Volkov', 'Andersson', 'Johansson', 'Nielsen',
  'Hansen', 'de Jong', 'van Dijk', 'Jansen', 'Papadopoulos', 'Nagy', 'Novák',
  // East and South-East Asia
  'Wang', 'Li', 'Zhang', 'Liu', 'Chen', 'Yang', 'Huang', 'Zhao', 'Wu', 'Zhou', 'Tan', 'Lim', 'Ng', 'Goh', 'Sato',
  'Suzuki', 'Takahashi', 'Tanaka', 'Watanabe', 'Yamamoto', 'Nakamura', 'Kim', 'Lee', 'Park', 'Choi', 'Jung',
  'Nguyen', 'Tran', 'Pham', 'Le', 'Hoang', 'Vu', 'Mendoza', 'Reyes', 'Cruz', 'Bautista', 'Srisai', 'Wongsawat',
];

export interface NumberingPlan {
  /** Country and mobile prefix digits. */
  prefix: string;
  /** Digits after the prefix. */
  bodyDigits: number;
  /** Bodies are `base + (i * multiplier) mod span`, zero-padded: a bijection of i < span. */
  base: number;
  span: number;
  /** Share of the contacts, in twentieths. */
  weight: number;
}

/**
 * Mobile ranges, each a different prefix at the same length or a different length, so numbers of
 * different plans never collide; within a plan the body is a permutation of the row number.
 */
export const NUMBERING_PLANS: readonly NumberingPlan[] = [
  { prefix: '62812', bodyDigits: 8, base: 0, span: 100_000_000, weight: 5 }, // Indonesia, Telkomsel
  { prefix: '62857', bodyDigits: 8, base: 0, span: 100_000_000, weight: 3 }, // Indonesia, Indosat
  { prefix: '9198', bodyDigits: 8, base: 0, span: 100_000_000, weight: 3 }, // India
  { prefix: '55119', bodyDigits: 8, base: 0, span: 100_000_000, weight: 2 }, // Brazil, São Paulo mobile
  { prefix: '234803', bodyDigits: 7, base: 0, span: 10_000_000, weight: 2 }, // Nigeria
  { prefix: '1415', bodyDigits: 7, base: 2_000_000, span: 8_000_000, weight: 1 }, // USA, San Francisco
  { prefix: '4479', bodyDigits: 8, base: 0, span: 100_000_000, weight: 1 }, // United Kingdom mobile
  { prefix: '49151', bodyDigits: 8, base: 0, span: 100_000_000, weight: 1 }, // Germany mobile
  { prefix: '5255', bodyDigits: 8, base: 0, span: 100_000_000, weight: 1 }, // Mexico City
  { prefix: '659', bodyDigits: 7, base: 0, span: 10_000_000, weight: 1 }, // Singapore mobile
];

/** Odd and not a multiple of 5: coprime with every span above, so i -> i*M mod span is one-to-one. */
export const PHONE_MULTIPLIER = 7_919_357;
